//! `ComputeStorage`: pages with ids and offset views, over any resource.
//!
//! The pool engine (mem-pools) talks to this trait only. It allocates whole
//! pages, addresses them by [`StorageId`], and carves them into views
//! ([`StorageHandle`]). Deallocation is deferred: `dealloc` queues a page and
//! `flush` gives queued pages back, so a page freed while a stream may still
//! use it is returned at a point the caller chooses. `bytes_allocated` counts
//! queued pages until they are flushed — they are still held from the device.
//!
//! [`crate::ResourceStorage`] provides the trait for every
//! [`crate::DeviceResource`], so a single page allocator serves the host,
//! simulated and CUDA backends and any adaptor stack above them.

use std::fmt;

use crate::error::StorageError;
use crate::id::{DevicePtr, StorageHandle, StorageId};
use crate::resource::MemInfo;

/// Page storage for the pool engine.
pub trait ComputeStorage: Send {
    /// What [`ComputeStorage::get`] resolves a view to (an address and length).
    type Resource: Send + fmt::Debug;

    /// Alignment of every page's start, in bytes.
    fn alignment(&self) -> u64;

    /// Allocate a page of `size` bytes; the handle covers the whole page.
    fn alloc(&mut self, size: u64) -> Result<StorageHandle, StorageError>;

    /// Resolve a view of a live page to its resource.
    ///
    /// # Errors
    /// [`StorageError::UnknownId`] for an id never issued or already
    /// deallocated; [`StorageError::OutOfBounds`] for a view past the page.
    fn get(&mut self, handle: &StorageHandle) -> Result<Self::Resource, StorageError>;

    /// Queue a page for deallocation at the next [`ComputeStorage::flush`].
    /// After this the id no longer resolves.
    fn dealloc(&mut self, id: StorageId) -> Result<(), StorageError>;

    /// Give every queued page back to the device. A page whose free fails
    /// stays queued (and counted) and the first error is returned: release
    /// was not proven, so the bytes are not reported as returned.
    fn flush(&mut self) -> Result<(), StorageError>;

    /// Bytes held from the device, including pages queued for deallocation.
    fn bytes_allocated(&self) -> u64;

    /// Free and total bytes of the device under this storage.
    fn mem_info(&self) -> Result<MemInfo, StorageError>;

    /// Whether pages hold real bytes (`false` on a simulated device).
    fn holds_memory(&self) -> bool {
        true
    }

    /// Write `data` at the start of the view `dst` (at most `dst.size()` bytes).
    fn write(&mut self, dst: &StorageHandle, data: &[u8]) -> Result<(), StorageError>;

    /// Read the first `out.len()` bytes of the view `src`.
    fn read(&mut self, src: &StorageHandle, out: &mut [u8]) -> Result<(), StorageError>;

    /// Set every byte of the view `dst` to `value`.
    fn fill(&mut self, dst: &StorageHandle, value: u8) -> Result<(), StorageError>;

    /// Copy `src.size()` bytes from the view `src` to the view `dst`
    /// (device to device, on the storage's stream).
    fn copy(&mut self, src: &StorageHandle, dst: &StorageHandle) -> Result<(), StorageError>;

    /// Wait until every write, fill and copy queued so far is complete.
    fn synchronize(&mut self) -> Result<(), StorageError>;
}

/// A view resolved by [`crate::ResourceStorage::get`]: an address and a length.
///
/// It holds no ownership: the page stays owned by the storage, exactly as a
/// sub-allocation of a CUDA slab is a raw pointer plus a length, never an
/// owning `CudaSlice` (which would free on drop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceView {
    /// The page this view lies in.
    pub page: StorageId,
    /// Address of the first byte of the view.
    pub ptr: DevicePtr,
    /// Number of bytes.
    pub size: u64,
}
