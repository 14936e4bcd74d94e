//! # mem-storage — raw device memory for gpumem
//!
//! The lowest layer of gpumem. It owns:
//! - [`DeviceResource`]: raw, stream-ordered allocation (`allocate(bytes,
//!   stream)`, `deallocate(ptr, bytes, stream)`) plus byte movement and
//!   stream ordering ([`DeviceResource::stream_wait`]), the layer every
//!   resource stack is built from;
//! - backends: [`HostResource`] (real host memory, the embedded default),
//!   [`SimulatedResource`] (addresses without memory, for replaying workloads
//!   larger than this machine), and CUDA through cudarc ([`CudaResource`] in
//!   [`cuda`]: `cuMemAlloc` or `cuMemAllocAsync`, registered streams, events);
//! - adaptors over any resource, each forwarding byte movement untouched:
//!   [`LoggingResource`] (a replayable event log, written as RMM CSV or a
//!   gpumem trace), [`StatsResource`] (current / peak / total bytes and
//!   counts), [`TrackingResource`] (outstanding allocations, leak report),
//!   [`FaultInjection`] (fail the k-th call or the calls a predicate picks),
//!   [`DriverCostResource`] (charge each call the modeled latency of the
//!   CUDA driver calls it stands for, from the one [`DriverCosts`] table,
//!   to a [`DriverMeter`]: nothing sleeps);
//! - [`ComputeStorage`]: pages with ids and offset views, provided for every
//!   resource by [`ResourceStorage`], which is what the pool engine uses
//!   ([`HostStorage`] and [`SimulatedStorage`] name the common two);
//! - [`VirtualMemory`]: CUDA-style virtual memory management beside
//!   `DeviceResource` (reserve a range of addresses, create physical chunks,
//!   map and unmap them), for arenas whose addresses never move while
//!   physical memory follows live data. Backends: [`HostVirtualMemory`] (a
//!   memfd mapped with `mmap(MAP_FIXED)`, Linux), [`SimulatedVirtualMemory`]
//!   (addresses and counts only) and [`CudaVirtualMemory`] (`cuMemCreate`,
//!   `cuMemMap`); every adaptor above implements it when its inner resource
//!   does.
//!
//! ## Example
//!
//! Raw stream-ordered memory from a host "device" of 1 MiB, and pages with
//! offset views over it:
//!
//! ```
//! use mem_storage::{
//!     ComputeStorage, DeviceResource, HostResource, Refuser, ResourceStorage, StreamId,
//! };
//!
//! let device = HostResource::with_capacity(1 << 20);
//! let ptr = device.allocate(4096, StreamId::DEFAULT)?;
//! // Asking for more than is free is a typed, retryable out-of-memory
//! // that says who refused.
//! let err = device.allocate(1 << 20, StreamId::DEFAULT).unwrap_err();
//! assert!(err.is_out_of_memory() && err.is_retryable());
//! assert_eq!(err.refused_by(), Some(Refuser::Device));
//! device.deallocate(ptr, 4096, StreamId::DEFAULT)?;
//!
//! // `ComputeStorage`: pages with ids; a view is a page id plus a range.
//! let mut storage = ResourceStorage::new(device);
//! let page = storage.alloc(4096)?;
//! let view = page.narrow(Some(100), Some(105)).expect("inside the page");
//! storage.write(&view, b"hello")?;
//! let mut back = [0; 5];
//! storage.read(&view, &mut back)?;
//! assert_eq!(&back, b"hello");
//! storage.dealloc(page.id)?;
//! storage.flush()?;
//! assert_eq!(storage.bytes_allocated(), 0);
//! # Ok::<(), mem_storage::StorageError>(())
//! ```
//!
//! ## Contract
//! - No call panics on any size, pointer or id a user can produce: failures
//!   are [`StorageError`] values. Out-of-memory ([`StorageError::OutOfMemory`],
//!   retryable after a reclaim) is distinct from a request that can never fit
//!   ([`StorageError::TooBig`]) and from an unknown or stale id.
//! - A refused call changes nothing: a failed free leaves the allocation
//!   owned and counted (release was not proven), a failed flush leaves its
//!   pages queued and counted.
//! - Every address is aligned to [`DeviceResource::alignment`]; every byte
//!   movement is checked against the live allocations, so a stale or
//!   overrunning range is [`StorageError::UnknownPointer`], never a write
//!   into a neighbour.
//! - Ids are never reused, so a stale id is detected, never aliased; this
//!   holds for storage ids, [`RangeId`]s and [`ChunkId`]s alike.
//! - Virtual memory: every size and offset is a multiple of
//!   [`VirtualMemory::granularity`] ([`StorageError::NotGranular`]
//!   otherwise); a chunk is mapped at most once and only whole; a mapped
//!   chunk cannot be released ([`StorageError::ChunkMapped`]) nor a range
//!   with mappings freed ([`StorageError::RangeInUse`]); a chunk keeps its
//!   bytes across unmap and remap; byte access reaches mapped addresses only
//!   and is checked against the mapping table before memory is touched
//!   ([`StorageError::UnmappedAddress`], never a segfault); dropping a
//!   backend unmaps and releases everything it holds.
//! - Sub-allocations are never wrapped in owning CUDA types: views are raw
//!   addresses plus lengths ([`DeviceView`]).
//! - Nothing here touches the CUDA driver unless a CUDA resource is built,
//!   and building one first checks that the driver library can be loaded
//!   ([`cuda_available`]), answering [`StorageError::NoDevice`] otherwise;
//!   a device without virtual memory management answers
//!   [`StorageError::Unsupported`], so callers can fall back to paged pools.
//!
//! ## Non-goals
//! - Slicing pages into allocations, caching, reuse: that is mem-pools.
//! - Budgets and ledgers: that is mem-budget, stacked above a resource.
//! - Choosing when to free: `dealloc` only queues, the caller flushes.
//! - Parsing traces back in: the CLI reads what [`LoggingResource`] writes.
//! - Graph capture: mem-capture drives it through the streams exposed here.

mod adaptors;
pub mod cuda;
mod driver_cost;
mod error;
mod host;
mod id;
mod physical;
mod resource;
mod simulated;
mod storage;
pub mod units;
mod vm;

pub use adaptors::driver_cost::{DriverCostResource, PageCalls};
pub use adaptors::fault::FaultInjection;
pub use adaptors::fault::plan::{Call, CallPredicate, FaultPlan, Operation};
pub use adaptors::hooks::{ChunkHooks, HookedResource, HookedVirtualMemory, MappedChunk};
pub use adaptors::logging::event_log::{Action, CSV_HEADER, ResourceEvent, write_csv, write_trace};
pub use adaptors::logging::tag::{TagScope, current_tag, tag_scope};
pub use adaptors::logging::{LoggingResource, VmAction, VmEvent};
pub use adaptors::stats::{ResourceStats, StatsResource};
pub use adaptors::tracking::{
    LeakReport, Outstanding, OutstandingChunk, OutstandingRange, TrackingResource,
    VirtualLeakReport,
};
pub use cuda::{CudaAllocMode, CudaEventHandle, CudaResource, CudaVirtualMemory, DriverPoolStats};
pub use driver_cost::{
    CALL_KINDS, COST_GRANULE, CallTally, CostSplit, DriverCall, DriverCosts, DriverMeter,
    DriverTime, ENTRY_GRAMMAR, LATENCY_GRAMMAR, Latency,
};
pub use error::{Refuser, StorageError};
pub use host::{HOST_ALIGNMENT, HostResource, HostVirtualMemory};
pub use id::{
    ChunkId, DevicePtr, RangeId, StorageHandle, StorageId, StorageUtilization, StreamId, VaRange,
};
pub use physical::PhysicalMemory;
pub use resource::{DeviceResource, MemInfo};
pub use simulated::{SimulatedResource, SimulatedVirtualMemory};
pub use storage::resource_storage::{HostStorage, ResourceStorage, SimulatedStorage};
pub use storage::{ComputeStorage, DeviceView};
pub use vm::{DEFAULT_GRANULARITY, ShareHandles, VirtualMemory, VirtualMemoryStats};

/// Whether the CUDA driver library can be loaded on this machine.
///
/// Call before anything touches the driver: with `dynamic-loading`, a missing
/// libcuda panics on the first driver call instead of returning an error.
pub fn cuda_available() -> bool {
    // SAFETY: `is_culib_present` only attempts `dlopen` on candidate library
    // names and drops the handle; it touches no driver state.
    unsafe { cudarc::driver::sys::is_culib_present() }
}
