//! # gpumem — a GPU memory manager for Rust runtimes
//!
//! The facade: one dependency, one [`Device`] with [`Stream`]s, and the
//! layers re-exported under [`storage`], [`pools`], [`budget`],
//! [`relocate`] and [`capture`] for everything beyond it.
//!
//! ```
//! use gpumem::prelude::*;
//!
//! let device = Device::host().budget(Budget::Bytes(64 * MIB)).ignore_env().build()?;
//! let stream = device.default_stream();
//! let buffer = stream.reserve(4096)?;
//! stream.write(&buffer, &[1, 2, 3])?;
//! stream.stamp(&buffer)?; // bound for the next operation
//! stream.submit(); // launch-like work that uses it
//! drop(buffer);
//! println!("{}", device.memory_report());
//! # Ok::<(), gpumem::GpuMemError>(())
//! ```
//!
//! ## Contract
//! - A device is a backend ([`Device::host`], [`Device::simulated`],
//!   [`Device::cuda`]) under mem-budget's `GlobalDeviceBudget`, with one
//!   `MemoryManagement` per stream over a storage on that budget: every page
//!   any stream's pools hold is charged against the one device budget.
//! - Configuration comes from code ([`GpumemConfig`], [`DeviceBuilder`]) and
//!   from `GPUMEM_CONF` (`key:value,…`, see [`conf`]; pool layouts in the
//!   grammar of [`layout`], shared with the `gpumem` command); a bad key or value is
//!   an error that lists what is valid, checked before any memory is touched.
//! - Cross-stream use follows the `MemoryManagement` cursor rule ([`Stream::bind`],
//!   [`Stream::must_wait`]) and PyTorch's `record_stream`
//!   ([`Stream::record_use`]): memory used by another stream's work is not
//!   reused before that work completes — on every path that takes memory
//!   from a handle: a drop, a `bind` (the rebound memory stays held), and
//!   every relocation, compaction and reclaim (every stream's work is
//!   finished first).
//! - A reservation the device or budget refuses is retried once after every
//!   stream's cached memory is given back; then it is
//!   [`GpuMemError::OutOfMemory`] with an [`OutOfMemoryReport`].
//! - Relocation across the streams runs mem-relocate's `RelocatingStreams`
//!   (its order of steps, once): every stream's work is finished before a
//!   byte moves, and nothing moves — nor is any page given back — while any
//!   stream records a graph.
//! - Statistics ([`MemoryStats`]) are PyTorch's: allocated, reserved, active,
//!   inactive and requested bytes and counts, current, peak and totals.
//! - No call panics on user input; errors are [`GpuMemError`] values.
//!
//! ## Non-goals
//! - Launching kernels or owning a runtime's streams: a runtime tells each
//!   stream how far its work got ([`Stream::submit`], [`Stream::complete_through`]).
//! - Driving backend graphs: mem-capture owns the capture sequence and the
//!   graph backends; the facade hands it the device's streams
//!   ([`Stream::capture_streams`]) and wraps it in a type-state
//!   ([`Stream::begin_capture`]).
//! - Pool internals, budgets' ledgers, device backends: the layers below.

mod access;
mod backend;
mod builder;
mod capture_pool;
mod capture_steps;
pub mod conf;
mod config;
mod cross_stream;
mod device;
mod device_stats;
#[cfg(all(test, loom))]
mod device_stats_loom;
mod error;
mod graph_capture;
mod guards;
pub mod layout;
mod oom;
mod pool_resource;
mod relocation;
mod relocation_calls;
mod report;
mod reserve;
mod sleep;
mod stats;
mod stream;
mod stream_state;
mod sync;
pub mod units;
mod waits;

/// The cudarc the CUDA backend is built on (to bring a context and streams).
pub use cudarc;
/// The storage layer: `ComputeStorage`, `DeviceResource`, backends, adaptors.
pub use mem_storage as storage;

/// The pool engine: `MemoryManagement`, handles, bindings, layouts, reports.
pub use mem_pools as pools;

/// Budgets: `GpuMemoryManager`, `MemoryBudget`, `GlobalDeviceBudget`, runtimes.
pub use mem_budget as budget;

/// Relocation across streams (`RelocatingStreams`).
pub use mem_relocate as relocate;

/// Graph capture (state machine, captured graphs, backends).
pub use mem_capture as capture;

pub use backend::{BudgetedResource, DeviceStorage, StreamMemory};
pub use builder::DeviceBuilder;
pub use capture_steps::{CaptureRecording, CaptureWarmup, DeviceGraph};
pub use config::{Budget, DEFAULT_POISON, DEFAULT_SLICED, GpumemConfig, PoolLayout};
pub use cross_stream::StreamWait;
pub use device::Device;
pub use error::{GpuMemError, Result};
pub use graph_capture::StreamCapture;
pub use guards::{DevicePtrGuard, PersistentWindow};
pub use layout::{LayoutError, format_layout, parse_layout};
pub use oom::{OutOfMemoryReport, Refuser};
pub use pool_resource::PoolResource;
pub use relocation::RelocationSummary;
pub use report::{DeviceReport, StreamReport};
pub use stats::{Fragmentation, MemoryStats};
pub use stream::Stream;
pub use waits::WaitStats;

/// What most users need, in one `use`.
pub mod prelude {
    pub use crate::units::{GIB, KIB, MIB};
    pub use crate::{
        Budget, Device, GpuMemError, GpumemConfig, MemoryStats, PoolLayout, Stream, StreamWait,
    };
    pub use mem_pools::{ManagedMemoryHandle, MemoryAllocationMode, SleepContents};
    pub use mem_relocate::RelocationReason;
}
