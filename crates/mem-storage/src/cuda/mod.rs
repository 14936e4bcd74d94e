//! CUDA backend through cudarc's driver API (dynamically loaded).
//!
//! [`CudaResource`] allocates whole driver allocations for the page storage
//! above it, synchronously (`cuMemAlloc` / `cuMemFree`) or stream-ordered
//! (`cuMemAllocAsync` / `cuMemFreeAsync`, on devices with memory pools),
//! and moves bytes with the driver's stream-ordered copies and memsets.
//! Streams are registered in the resource and named by [`StreamId`]; events
//! ([`CudaEventHandle`]) order one stream after another, which is what the
//! relocation engine's copy stream needs. [`CudaVirtualMemory`] is the
//! driver's virtual memory management (reserve, create, map) behind
//! [`crate::VirtualMemory`].
//!
//! Why raw `CUdeviceptr`s and not `CudaSlice`: a `CudaSlice` frees its memory
//! on drop and carries per-allocation events; pages are owned by the page
//! storage and sub-allocations by the pools, so every pointer handed out here
//! is a plain address whose lifetime the layers above decide.
//!
//! Nothing here touches the driver before [`crate::cuda_available`] said the
//! library loads: with `dynamic-loading`, a missing libcuda panics on the
//! first driver call. Construction checks it and answers
//! [`StorageError::NoDevice`] otherwise.
//!
//! [`StreamId`]: crate::StreamId
//! [`StorageError::NoDevice`]: crate::StorageError::NoDevice

mod alloc;
mod events;
mod peers;
mod pool;
mod resource;
mod streams;
mod transfer;
mod vm;
mod vm_driver;
mod vm_memory;
mod vm_peers;
mod vm_share;

pub use events::CudaEventHandle;
pub use pool::DriverPoolStats;
pub use resource::CudaResource;
pub use vm::CudaVirtualMemory;

/// How a [`CudaResource`] allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CudaAllocMode {
    /// `cuMemAlloc` / `cuMemFree`: works on every device; a free waits for
    /// the device, and the stream argument only orders nothing.
    Sync,
    /// `cuMemAllocAsync` / `cuMemFreeAsync` on the call's stream, from the
    /// device's default memory pool: memory is reusable in stream order
    /// without a device-wide wait. Needs memory-pool support.
    StreamOrdered,
}

/// Map a driver error to this crate's error, naming what was being done.
pub(crate) fn driver(
    operation: &'static str,
) -> impl FnOnce(cudarc::driver::DriverError) -> crate::StorageError {
    move |source| crate::StorageError::Driver { operation, source }
}
