//! The bridge from CubeCL's `ComputeStorage` to the one mem-pools carves.
//!
//! CubeCL's storage (`cubecl_server::storage::ComputeStorage`: `alignment`,
//! `get`, `alloc`, `dealloc`, `flush`, `bytes_allocated`) hands out
//! `{id, offset, size}` handles over device buffers; mem-pools' storage
//! (`mem_storage::ComputeStorage`) is the same idea with `u64` page ids and
//! a few calls more. [`CubeStorage`] gives each CubeCL buffer a mem-storage
//! id, answers the calls mem-pools makes on the paged path, and keeps the
//! error CubeCL's storage returned so the adapter can hand it back
//! unchanged (an `OutOfMemory` stays an `OutOfMemory`).
//!
//! It has no virtual memory (`chunk_granularity` is `None`): wgpu cannot
//! map physical memory under reserved addresses, so mem-pools serves it with
//! paged pools, never arenas.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cubecl_server::server::IoError as CubeIoError;
use cubecl_server::storage::{
    ComputeStorage as CubeComputeStorage, StorageHandle as CubeHandle, StorageId as CubeId,
    StorageUtilization as CubeUtilization,
};
use mem_storage::{ComputeStorage, MemInfo, Refuser, StorageError, StorageHandle, StorageId};

/// What mem-storage reports as free and total bytes when the CubeCL device
/// states no capacity: "unknown", as a number no page reaches, so a growth
/// gives its empty pages back before it asks for the grown one (as CubeCL's
/// own engine does).
pub const UNKNOWN_CAPACITY: u64 = 1 << 60;

const BACKEND: &str = "cubecl storage";

/// One CubeCL buffer behind a mem-storage page id.
#[derive(Debug, Clone, Copy)]
struct Page {
    id: CubeId,
    size: u64,
}

/// A CubeCL storage as mem-pools sees it (see the module docs).
#[derive(Debug)]
pub struct CubeStorage<S> {
    inner: S,
    pages: HashMap<u64, Page>,
    next_id: u64,
    capacity: Option<u64>,
    /// While set, `alloc` refuses: a reservation under
    /// `PageUpdate::Forbidden` may use only the pages already held.
    forbid_alloc: bool,
    /// The error CubeCL's storage returned last, for the adapter to return.
    last_error: Option<CubeIoError>,
    buffers_created: u64,
    /// `inner.bytes_allocated()` after the last call that changes it, for
    /// readers that hold the engine only by `&`.
    allocated: Arc<AtomicU64>,
}

impl<S: CubeComputeStorage> CubeStorage<S> {
    /// Wrap `inner`; `capacity` is the device's stated bytes, if any.
    pub fn new(inner: S, capacity: Option<u64>) -> Self {
        Self {
            inner,
            pages: HashMap::new(),
            next_id: 0,
            capacity,
            forbid_alloc: false,
            last_error: None,
            buffers_created: 0,
            allocated: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The CubeCL storage underneath.
    pub fn inner(&mut self) -> &mut S {
        &mut self.inner
    }

    /// Buffers asked of CubeCL's storage so far.
    pub fn buffers_created(&self) -> u64 {
        self.buffers_created
    }

    /// The CubeCL handle of a mem-storage view, or `None` for a page this
    /// storage does not hold.
    pub fn view(&self, handle: &StorageHandle) -> Option<CubeHandle> {
        let page = self.pages.get(&handle.id.0)?;
        Some(CubeHandle::new(
            page.id,
            CubeUtilization {
                offset: handle.offset(),
                size: handle.size(),
            },
        ))
    }

    /// The counter of bytes held from the device, kept current by this
    /// storage.
    pub(crate) fn allocated(&self) -> Arc<AtomicU64> {
        self.allocated.clone()
    }

    fn count(&self) {
        (self.allocated).store(self.inner.bytes_allocated(), Ordering::Relaxed);
    }

    pub(crate) fn set_forbid_alloc(&mut self, forbid: bool) {
        self.forbid_alloc = forbid;
    }

    pub(crate) fn take_error(&mut self) -> Option<CubeIoError> {
        self.last_error.take()
    }

    pub(crate) fn keep_error(&mut self, error: CubeIoError) {
        self.last_error = Some(error);
    }
}

impl<S: CubeComputeStorage> ComputeStorage for CubeStorage<S> {
    type Resource = CubeHandle;

    fn alignment(&self) -> u64 {
        self.inner.alignment() as u64
    }

    fn alloc(&mut self, size: u64) -> Result<StorageHandle, StorageError> {
        if self.forbid_alloc {
            return Err(StorageError::Unsupported {
                operation: "alloc while no page may be added",
                backend: BACKEND,
            });
        }
        let free = self.capacity.map_or(UNKNOWN_CAPACITY, |cap| {
            cap.saturating_sub(self.inner.bytes_allocated())
        });
        match self.inner.alloc(size) {
            Ok(handle) => {
                self.buffers_created += 1;
                let id = self.next_id;
                self.next_id += 1;
                let page = Page {
                    id: handle.id,
                    size: handle.size().max(size),
                };
                self.pages.insert(id, page);
                self.count();
                Ok(StorageHandle::whole(StorageId(id), size))
            }
            Err(error) => {
                let mapped = match &error {
                    CubeIoError::BufferTooBig { .. } => StorageError::TooBig {
                        backend: BACKEND,
                        refused_by: Refuser::Device,
                        requested: size,
                        max: size.saturating_sub(1),
                    },
                    _ => StorageError::OutOfMemory {
                        backend: BACKEND,
                        refused_by: Refuser::Device,
                        requested: size,
                        free,
                        total: self.capacity.unwrap_or(UNKNOWN_CAPACITY),
                    },
                };
                self.last_error = Some(error);
                Err(mapped)
            }
        }
    }

    fn get(&mut self, handle: &StorageHandle) -> Result<CubeHandle, StorageError> {
        let page = self
            .pages
            .get(&handle.id.0)
            .ok_or(StorageError::UnknownId { id: handle.id })?;
        let end = handle.utilization.end().unwrap_or(u64::MAX);
        if end > page.size {
            return Err(StorageError::OutOfBounds {
                id: handle.id,
                start: handle.offset(),
                end,
                page_size: page.size,
            });
        }
        self.view(handle)
            .ok_or(StorageError::UnknownId { id: handle.id })
    }

    fn dealloc(&mut self, id: StorageId) -> Result<(), StorageError> {
        let page = self
            .pages
            .remove(&id.0)
            .ok_or(StorageError::UnknownId { id })?;
        self.inner.dealloc(page.id);
        self.count();
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StorageError> {
        self.inner.flush();
        self.count();
        Ok(())
    }

    fn bytes_allocated(&self) -> u64 {
        self.inner.bytes_allocated()
    }

    fn mem_info(&self) -> Result<MemInfo, StorageError> {
        let total = self.capacity.unwrap_or(UNKNOWN_CAPACITY);
        // No room while no page may be added: a growth then asks for its
        // page with the empty ones still held, and the refusal changes
        // nothing (no page is given back under `PageUpdate::Forbidden`).
        let free = match self.forbid_alloc {
            true => 0,
            false => total.saturating_sub(self.inner.bytes_allocated()),
        };
        Ok(MemInfo { free, total })
    }

    fn write(&mut self, _: &StorageHandle, _: &[u8]) -> Result<(), StorageError> {
        Err(unsupported("write"))
    }

    fn read(&mut self, _: &StorageHandle, _: &mut [u8]) -> Result<(), StorageError> {
        Err(unsupported("read"))
    }

    fn fill(&mut self, _: &StorageHandle, _: u8) -> Result<(), StorageError> {
        Err(unsupported("fill"))
    }

    fn copy(&mut self, _: &StorageHandle, _: &StorageHandle) -> Result<(), StorageError> {
        Err(unsupported(
            "copy (relocation copies go through CubeCL's CopyQueue)",
        ))
    }

    fn synchronize(&mut self) -> Result<(), StorageError> {
        Err(unsupported("synchronize"))
    }
}

/// CubeCL's storage moves no bytes itself: its runtime does, on its queue.
fn unsupported(operation: &'static str) -> StorageError {
    StorageError::Unsupported {
        operation,
        backend: BACKEND,
    }
}
