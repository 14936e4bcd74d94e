//! # gpumem-replay — allocation traces replayed through allocators
//!
//! The library under the `gpumem` command (and the benchmarks): it
//! replays allocation traces against an allocator and measures what a
//! user compares allocators by: peak live and reserved bytes,
//! fragmentation, device allocations, and time per op.
//!
//! - [`trace`]: the event model and its readers (gpumem JSON Lines, RMM's
//!   logging-adaptor CSV, PyTorch memory snapshots with their pickle
//!   machine, each plain or gzipped) and the JSONL writer.
//! - [`workload`]: built-in seeded workloads (`random`, `training`,
//!   `serving`, `devlog`, `growth`, `span`, `live`).
//! - [`replay`]: the [`replay::AllocBackend`] port and the timed loop;
//!   gpumem is replayed through `gpumem::Device` (one `gpumem::Stream` per
//!   trace stream, the facade's defaults and statistics), and relocates as
//!   a runtime would when asked.
//! - [`setup`]: the backend a replay runs on, its device size and pool
//!   settings; pool layouts as text are the facade's grammar,
//!   `gpumem::config::layout`, the one `GPUMEM_CONF=pools:…` takes.
//! - [`compare`]: one trace through several allocators (gpumem's default,
//!   its paged layouts, offset-allocator, the PyTorch caching-allocator
//!   models, the `cudaMalloc`-per-request baseline), one table.
//! - [`plan`]: a layout sized to a trace's high-water marks, measured.
//! - [`report`], [`attribution`], [`side_by_side`]: what a replay
//!   measured, who held the memory at the peaks, and the recorded
//!   allocator's own curve beside gpumem's.
//!
//! ## Features
//! - `clap`: the choice enums (`BackendKind`, `StreamMode`, `Workload`,
//!   `TraceFormat`, `GroupBy`, `CompareBackend`) derive `clap::ValueEnum`,
//!   as the command's arguments take them.
//!
//! ## Contract
//! - Malformed input is a [`ReplayError`] naming the line or record, never
//!   a panic. A free of an id that is not live is counted, not fatal.
//! - Workloads are deterministic: the same workload, seed and scale give the
//!   same events on every machine.
//! - `wall_ns` covers the replay loop alone: parsing happens before the clock
//!   starts and the report is assembled after it stops.
//!
//! ## Non-goals
//! - Multi-threaded `replay`: [`replay::replay`] replays events in global
//!   trace order on one thread (streams are passed to the backend, not run
//!   concurrently). Only [`compare::replay_threaded`] runs one thread per
//!   stream through one `gpumem::Device`, to time the facade under
//!   concurrent streams; its peak live is the interleaving's, not the
//!   trace's.
//! - Being an allocator: every number comes from the backend under test.

pub mod attribution;
pub mod compare;
pub mod error;
pub mod plan;
pub mod replay;
pub mod report;
pub mod setup;
pub mod side_by_side;
pub mod trace;
pub mod workload;

pub use error::{ReplayError, Result};
