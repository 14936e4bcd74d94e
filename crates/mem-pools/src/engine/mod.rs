//! The engine: [`MemoryManagement`](management::MemoryManagement) (its whole
//! public API in `management.rs`) over the storage-free state [`core::Core`]
//! (slots, slice and page tables, pools), and the calls every noun shares:
//! reaching memory, the free path, cleanup and layout changes.

pub(crate) mod access;
mod api_moves;
mod api_observe;
pub(crate) mod bind;
pub(crate) mod core;
pub(crate) mod cursors;
pub(crate) mod free_path;
pub(crate) mod lifecycle;
pub(crate) mod management;
pub(crate) mod pins;
pub(crate) mod reserve;
pub(crate) mod slots;
pub(crate) mod state;
pub(crate) mod tables;
