//! The engine: [`MemoryManagement`](state::MemoryManagement) (its whole
//! public API in `management.rs`) on top of the pools (`pools/`) and their
//! floor (`tables/`), and its machinery beside it, a file per concern:
//! reserving, reaching memory, `bind`, pins, the free path, cleanup and
//! layout changes, the capture window, relocation and compaction, sleep and
//! wake, re-claiming an extent, and the reports.

pub(crate) mod access;
pub(crate) mod bind;
mod capture;
mod compaction;
pub(crate) mod free_path;
pub(crate) mod lifecycle;
pub(crate) mod management;
mod pending;
pub(crate) mod pins;
mod reclaim;
mod relocation_copy;
mod relocation_plan;
mod report;
pub(crate) mod reserve;
mod sleep;
pub(crate) mod state;
