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
use crate::vm::ChunkId;

pub(crate) mod resource_storage;
pub(crate) mod virtual_pages;

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

    // --- Virtual pages (arena pools). A storage without virtual memory
    // answers `None` / `Unsupported` and the engine uses paged pools. ---

    /// The size of one physical chunk when this storage has virtual memory
    /// ([`crate::VirtualMemory`]), `None` otherwise.
    fn chunk_granularity(&self) -> Option<u64> {
        None
    }

    /// Reserve a *virtual page* of `size` bytes (a multiple of the
    /// granularity): addresses only, no memory. Views of it resolve like any
    /// page's, but bytes are reachable only where chunks are mapped, and
    /// `dealloc` of it is refused while any chunk is mapped in it.
    fn alloc_virtual(&mut self, size: u64) -> Result<StorageHandle, StorageError> {
        let _ = size;
        Err(self.no_virtual_memory("alloc_virtual"))
    }

    /// Create one physical chunk of [`Self::chunk_granularity`] bytes; it
    /// counts in [`Self::bytes_allocated`] until released.
    fn create_chunk(&mut self) -> Result<ChunkId, StorageError> {
        Err(self.no_virtual_memory("create_chunk"))
    }

    /// Create one physical chunk of `bytes` (a positive multiple of
    /// [`Self::chunk_granularity`]): one driver call however large, mapped
    /// later by one [`Self::map_chunk`]. A storage that only creates
    /// granule-sized chunks serves exactly one granule.
    fn create_chunk_of(&mut self, bytes: u64) -> Result<ChunkId, StorageError> {
        match self.chunk_granularity() {
            Some(g) if bytes == g => self.create_chunk(),
            _ => Err(self.no_virtual_memory("create_chunk_of")),
        }
    }

    /// Give a chunk back (refused while mapped).
    fn release_chunk(&mut self, chunk: ChunkId) -> Result<(), StorageError> {
        let _ = chunk;
        Err(self.no_virtual_memory("release_chunk"))
    }

    /// Map `chunk` at `offset` (a multiple of the granularity) of virtual
    /// page `page`.
    fn map_chunk(
        &mut self,
        page: StorageId,
        offset: u64,
        chunk: ChunkId,
    ) -> Result<(), StorageError> {
        let _ = (page, offset, chunk);
        Err(self.no_virtual_memory("map_chunk"))
    }

    /// Unmap the chunk whose mapping starts at `offset` of virtual page
    /// `page` (all of it, however many granules) and return it (it keeps
    /// its bytes). The caller makes sure no queued work still reads it.
    fn unmap_chunk(&mut self, page: StorageId, offset: u64) -> Result<ChunkId, StorageError> {
        let _ = (page, offset);
        Err(self.no_virtual_memory("unmap_chunk"))
    }

    /// Bytes of virtual address space this storage's virtual pages reserve.
    fn virtual_bytes(&self) -> u64 {
        0
    }

    /// The error a storage without virtual memory answers.
    fn no_virtual_memory(&self, operation: &'static str) -> StorageError {
        StorageError::Unsupported {
            operation,
            backend: "this storage (no virtual memory)",
        }
    }
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
