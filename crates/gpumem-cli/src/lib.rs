//! # gpumem-cli — the `gpumem` command's library
//!
//! Replays allocation traces against an allocator and reports what a user
//! compares allocators by: peak live and reserved bytes, fragmentation,
//! device allocations, and time per op.
//!
//! - [`trace`]: the event model and its readers (gpumem JSON Lines, RMM's
//!   logging-adaptor CSV, PyTorch memory snapshots, each plain or gzipped)
//!   and the JSONL writer.
//! - [`workload`]: built-in seeded workloads (`random`, `training`,
//!   `serving`, `devlog`).
//! - [`replay`]: the [`replay::AllocBackend`] port and the timed loop;
//!   gpumem is replayed through `gpumem::Device` (one `gpumem::Stream` per
//!   trace stream, the facade's defaults and statistics), and relocates as
//!   a runtime would when asked.
//! - Pool layouts as text (`--config`, `gpumem plan`) are the facade's
//!   grammar, `gpumem::config::layout`, the one `GPUMEM_CONF=pools:…` takes.
//! - [`compare`]: one trace through several allocators (gpumem's default,
//!   its paged layouts, offset-allocator, the system baseline), one table.
//! - [`report`], [`plot`]: the results as text, JSON and SVG.
//! - [`cli`]: the command-line front end used by the `gpumem` binary.
//!
//! ## Contract
//! - Malformed input is a [`CliError`] naming the line or record, never a
//!   panic. A free of an id that is not live is counted, not fatal.
//! - Workloads are deterministic: the same workload, seed and scale give the
//!   same events on every machine.
//! - `wall_ns` covers the replay loop alone: parsing happens before the clock
//!   starts and the report is assembled after it stops.
//!
//! ## Non-goals
//! - Multi-threaded `replay`: `gpumem replay` (and `plan`) replays events in
//!   global trace order on one thread (streams are passed to the backend,
//!   not run concurrently). Only `gpumem compare --threads` runs one thread
//!   per stream through one `gpumem::Device`, to time the facade under
//!   concurrent streams; its peak live is the interleaving's, not the
//!   trace's.
//! - Being an allocator: every number comes from the backend under test.

pub mod attribution;
pub mod cli;
pub mod compare;
pub mod error;
pub mod html;
pub mod input;
pub mod plan;
pub mod plot;
pub mod replay;
pub mod report;
pub mod side_by_side;
pub mod trace;
pub mod workload;

pub use error::{CliError, Result};
