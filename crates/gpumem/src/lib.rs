//! # gpumem — a GPU memory manager for Rust runtimes
//!
//! The facade: one dependency, one [`Device`] with [`Stream`]s. At the
//! root are those two, the error, [`units`] and [`prelude`]; everything else is in a
//! named module:
//!
//! | module | holds |
//! |---|---|
//! | [`device`] | [`Device`] and [`device::DeviceBuilder`], the resource stack types, [`device::PoolResource`], `cudarc` |
//! | [`stream`] | [`Stream`], [`stream::StreamWait`], the guards ([`stream::DevicePtrGuard`], [`stream::PersistentWindow`]) |
//! | [`config`] | [`config::GpumemConfig`], [`config::Budget`], [`config::PoolLayout`], `GPUMEM_CONF` ([`config::conf`]), the layout grammar ([`config::layout`]) |
//! | [`units`] | byte sizes: `KIB`..`TIB`, parsing and printing them |
//! | [`stats`] | [`stats::MemoryStats`], [`stats::DeviceReport`] |
//! | [`error`] | [`GpuMemError`], [`error::Result`], [`error::OutOfMemoryReport`] |
//! | [`capture`] | the capture type-state on a stream, and mem-capture |
//! | [`storage`], [`pools`], [`budget`], [`relocate`] | the layers below, whole |
//!
//! ```
//! use gpumem::prelude::*;
//!
//! let device = Device::host().budget(Budget::Bytes(64 * MIB)).ignore_env().build()?;
//! let stream = device.default_stream();
//! let buffer = stream.reserve(4096)?;
//! stream.write(&buffer, &[1, 2, 3])?;
//! stream.stamp(&buffer)?; // bound for the next operation
//! let launch = stream.launch(&[&buffer])?; // nothing moves until submit
//! let _view = launch.view(&buffer)?; // what the work uses
//! launch.submit(); // launch-like work that uses it, counted
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
//! - Configuration comes from code ([`config::GpumemConfig`], [`device::DeviceBuilder`]) and
//!   from `GPUMEM_CONF` (`key:value,…`, see [`config::conf`]; pool layouts in the
//!   grammar of [`config::layout`], shared with the `gpumem` command); a bad key or value is
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
//!   [`GpuMemError::OutOfMemory`] with an [`error::OutOfMemoryReport`].
//! - Relocation across the streams runs mem-relocate's `RelocatingStreams`
//!   (its order of steps, once): every stream's work is finished before a
//!   byte moves, and nothing moves — nor is any page given back — while any
//!   stream records a graph; a launch ([`Stream::launch`]) holds the
//!   device's moving lock shared from reading its buffers' addresses to
//!   counting its work, so no move lands in between.
//! - Statistics ([`stats::MemoryStats`]) are PyTorch's: allocated, reserved, active,
//!   inactive and requested bytes and counts, current, peak and totals.
//! - No call panics on user input; errors are [`GpuMemError`] values.
//!
//! ## Non-goals
//! - Launching kernels or owning a runtime's streams: a runtime tells each
//!   stream how far its work got ([`Stream::launch`], [`Stream::complete_through`]).
//! - Driving backend graphs: mem-capture owns the capture sequence and the
//!   graph backends; the facade hands it the device's streams
//!   ([`Stream::capture_streams`]) and wraps it in a type-state
//!   ([`Stream::begin_capture`]).
//! - Pool internals, budgets' ledgers, device backends: the layers below.

mod backend;
pub mod capture;
pub mod config;
pub mod device;
pub mod error;
mod relocation;
mod shared;
#[cfg(unix)]
pub mod sharing;
pub mod stats;
pub mod stream;
mod sync;
pub mod units;

/// The storage layer: `ComputeStorage`, `DeviceResource`, backends, adaptors.
pub use mem_storage as storage;

/// The pool engine: `MemoryManagement`, handles, bindings, layouts, reports.
pub use mem_pools as pools;

/// Budgets: `GpuMemoryManager`, `MemoryBudget`, `GlobalDeviceBudget`, runtimes.
pub use mem_budget as budget;

/// Relocation across streams (`RelocatingStreams`, `RelocationSummary`).
pub use mem_relocate as relocate;

pub use error::GpuMemError;
pub use shared::{Device, Stream};

/// What most users need, in one `use`.
pub mod prelude {
    pub use crate::config::{Budget, GpumemConfig, PoolLayout};
    pub use crate::stats::MemoryStats;
    pub use crate::stream::StreamWait;
    pub use crate::units::{GIB, KIB, MIB};
    pub use crate::{Device, GpuMemError, Stream};
    pub use mem_pools::{ManagedMemoryHandle, MemoryAllocationMode, SleepContents};
    pub use mem_relocate::RelocationReason;
}
