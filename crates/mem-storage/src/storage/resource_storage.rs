//! `ResourceStorage`: [`ComputeStorage`] over any [`DeviceResource`].
//!
//! One page is one resource allocation, on the storage's stream. Pages live
//! in a map keyed by a never-reused [`StorageId`]; `dealloc` moves a page to
//! a queue that `flush` gives back, so a page a stream may still be using is
//! freed at a point the caller chooses. Every view is checked against its
//! page before an address is formed, and every byte movement again by the
//! resource, so a stale id or an overrunning view is an error, not a write
//! into a neighbour.

use std::collections::HashMap;

use crate::error::StorageError;
use crate::id::{DevicePtr, StorageHandle, StorageId, StreamId};
use crate::resource::{DeviceResource, MemInfo};
use crate::storage::virtual_pages::VirtualPages;
use crate::storage::{ComputeStorage, DeviceView};
use crate::vm::{ChunkId, VirtualMemory};

#[derive(Debug, Clone, Copy)]
struct Page {
    ptr: DevicePtr,
    size: u64,
}

/// [`ComputeStorage`] over any [`DeviceResource`], on one stream.
#[derive(Debug)]
pub struct ResourceStorage<R: DeviceResource> {
    resource: R,
    stream: StreamId,
    live: HashMap<StorageId, Page>,
    pending: Vec<(StorageId, Page)>,
    next_id: u64,
    bytes: u64,
    /// Virtual pages and chunks, when given a [`VirtualMemory`].
    pub(crate) virt: Option<VirtualPages>,
}

impl<R: DeviceResource> ResourceStorage<R> {
    /// Pages from `resource`, allocated and freed in order on the default stream.
    pub fn new(resource: R) -> Self {
        Self::on_stream(resource, StreamId::DEFAULT)
    }

    /// Pages from `resource`, allocated and freed in order on `stream`.
    pub fn on_stream(resource: R, stream: StreamId) -> Self {
        Self {
            resource,
            stream,
            live: HashMap::new(),
            pending: Vec::new(),
            next_id: 0,
            bytes: 0,
            virt: None,
        }
    }

    /// A fresh page id.
    fn next_page_id(&mut self) -> StorageId {
        let id = StorageId(self.next_id);
        self.next_id += 1;
        id
    }

    /// The resource pages come from.
    pub fn resource(&self) -> &R {
        &self.resource
    }

    /// The stream pages are allocated, freed and copied on.
    pub fn stream(&self) -> StreamId {
        self.stream
    }

    /// Number of live pages (not counting pages queued for deallocation).
    pub fn page_count(&self) -> usize {
        self.live.len()
    }

    /// Address range of a view, checked against its page.
    fn locate(&self, handle: &StorageHandle) -> Result<DeviceView, StorageError> {
        let virtual_page = self
            .virt
            .as_ref()
            .and_then(|v| v.page(handle.id))
            .map(|p| Page {
                ptr: p.range.base,
                size: p.range.len,
            });
        let page = virtual_page
            .as_ref()
            .or_else(|| self.live.get(&handle.id))
            .ok_or(StorageError::UnknownId { id: handle.id })?;
        let out_of_bounds = StorageError::OutOfBounds {
            id: handle.id,
            start: handle.offset(),
            end: handle.offset().saturating_add(handle.size()),
            page_size: page.size,
        };
        match handle.utilization.end() {
            Some(end) if end <= page.size => Ok(DeviceView {
                page: handle.id,
                ptr: page.ptr.checked_add(handle.offset()).ok_or(out_of_bounds)?,
                size: handle.size(),
            }),
            _ => Err(out_of_bounds),
        }
    }
}

impl<R: DeviceResource> Drop for ResourceStorage<R> {
    fn drop(&mut self) {
        // Give everything back; a storage going away owns no memory after.
        let _ = self.synchronize();
        if let Some(virt) = self.virt.as_mut() {
            virt.release_all();
        }
        let pages: Vec<_> = self.live.drain().chain(self.pending.drain(..)).collect();
        for (id, page) in pages {
            if let Err(err) = self.resource.deallocate(page.ptr, page.size, self.stream) {
                tracing::error!(%id, %err, "page could not be freed while dropping its storage");
            }
        }
    }
}

impl<R: DeviceResource> ComputeStorage for ResourceStorage<R> {
    type Resource = DeviceView;

    fn alignment(&self) -> u64 {
        self.resource.alignment()
    }

    fn alloc(&mut self, size: u64) -> Result<StorageHandle, StorageError> {
        let ptr = self.resource.allocate(size, self.stream)?;
        let id = self.next_page_id();
        self.live.insert(id, Page { ptr, size });
        self.bytes += size;
        Ok(StorageHandle::whole(id, size))
    }

    fn get(&mut self, handle: &StorageHandle) -> Result<DeviceView, StorageError> {
        self.locate(handle)
    }

    fn dealloc(&mut self, id: StorageId) -> Result<(), StorageError> {
        if self.is_virtual(id) {
            return self.virt_mut("dealloc")?.dealloc(id);
        }
        let page = self
            .live
            .remove(&id)
            .ok_or(StorageError::UnknownId { id })?;
        self.pending.push((id, page));
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StorageError> {
        let mut first_error = None;
        let mut kept = Vec::new();
        for (id, page) in std::mem::take(&mut self.pending) {
            match self.resource.deallocate(page.ptr, page.size, self.stream) {
                Ok(()) => self.bytes -= page.size,
                Err(err) => {
                    tracing::warn!(%id, %err, "page free failed; it stays queued and counted");
                    first_error.get_or_insert(err);
                    kept.push((id, page));
                }
            }
        }
        self.pending = kept;
        if let Some(virt) = self.virt.as_mut()
            && let Err(err) = virt.flush()
        {
            first_error.get_or_insert(err);
        }
        first_error.map_or(Ok(()), Err)
    }

    fn bytes_allocated(&self) -> u64 {
        self.bytes + self.virt.as_ref().map_or(0, |v| v.chunk_bytes)
    }

    fn mem_info(&self) -> Result<MemInfo, StorageError> {
        self.resource.mem_info()
    }

    fn holds_memory(&self) -> bool {
        self.resource.holds_memory()
    }

    fn write(&mut self, dst: &StorageHandle, data: &[u8]) -> Result<(), StorageError> {
        let view = self.locate(dst)?;
        if data.len() as u64 > view.size {
            return Err(StorageError::OutOfBounds {
                id: dst.id,
                start: dst.offset(),
                end: dst.offset().saturating_add(data.len() as u64),
                page_size: view.size,
            });
        }
        match &self.virt {
            Some(v) if v.is_live(dst.id) => v.vm.write_mapped(view.ptr, data),
            _ => self.resource.write(view.ptr, data, self.stream),
        }
    }

    fn read(&mut self, src: &StorageHandle, out: &mut [u8]) -> Result<(), StorageError> {
        let view = self.locate(src)?;
        if out.len() as u64 > view.size {
            return Err(StorageError::OutOfBounds {
                id: src.id,
                start: src.offset(),
                end: src.offset().saturating_add(out.len() as u64),
                page_size: view.size,
            });
        }
        match &self.virt {
            Some(v) if v.is_live(src.id) => v.vm.read_mapped(view.ptr, out),
            _ => self.resource.read(view.ptr, out, self.stream),
        }
    }

    fn fill(&mut self, dst: &StorageHandle, value: u8) -> Result<(), StorageError> {
        let view = self.locate(dst)?;
        match &self.virt {
            Some(v) if v.is_live(dst.id) => v.vm.fill_mapped(view.ptr, value, view.size),
            _ => self.resource.fill(view.ptr, value, view.size, self.stream),
        }
    }

    fn copy(&mut self, src: &StorageHandle, dst: &StorageHandle) -> Result<(), StorageError> {
        let from = self.locate(src)?;
        let to = self.locate(dst)?;
        if from.size > to.size {
            return Err(StorageError::OutOfBounds {
                id: dst.id,
                start: dst.offset(),
                end: dst.offset().saturating_add(from.size),
                page_size: to.size,
            });
        }
        match (self.is_virtual(src.id), self.is_virtual(dst.id), &self.virt) {
            (false, false, _) => self.resource.copy(from.ptr, to.ptr, from.size, self.stream),
            (true, true, Some(v)) => v.vm.copy_mapped(from.ptr, to.ptr, from.size),
            // Between a virtual page and a resource page (a move between
            // pool kinds): through the host, in bounded pieces.
            _ => self.bounce(src, dst, from.size),
        }
    }

    fn synchronize(&mut self) -> Result<(), StorageError> {
        self.resource.synchronize(self.stream)
    }

    fn chunk_granularity(&self) -> Option<u64> {
        self.virt.as_ref().map(|v| v.vm.granularity())
    }

    fn alloc_virtual(&mut self, size: u64) -> Result<StorageHandle, StorageError> {
        self.virt_mut("alloc_virtual")?;
        let id = StorageId(self.next_id);
        let len = self.virt_mut("alloc_virtual")?.reserve(id, size)?;
        self.next_id += 1;
        Ok(StorageHandle::whole(id, len))
    }

    fn create_chunk(&mut self) -> Result<ChunkId, StorageError> {
        let g = self.virt_mut("create_chunk")?.vm.granularity();
        self.virt_mut("create_chunk")?.create_chunk(g)
    }

    fn create_chunk_of(&mut self, bytes: u64) -> Result<ChunkId, StorageError> {
        self.virt_mut("create_chunk_of")?.create_chunk(bytes)
    }

    fn release_chunk(&mut self, chunk: ChunkId) -> Result<(), StorageError> {
        self.virt_mut("release_chunk")?.release_chunk(chunk)
    }

    fn map_chunk(
        &mut self,
        page: StorageId,
        offset: u64,
        chunk: ChunkId,
    ) -> Result<(), StorageError> {
        self.virt_mut("map_chunk")?.map(page, offset, chunk)
    }

    fn unmap_chunk(&mut self, page: StorageId, offset: u64) -> Result<ChunkId, StorageError> {
        self.virt_mut("unmap_chunk")?.unmap(page, offset)
    }

    fn virtual_bytes(&self) -> u64 {
        self.virt.as_ref().map_or(0, |v| v.virtual_bytes)
    }
}

/// The embedded default storage: pages of real host memory.
pub type HostStorage = ResourceStorage<crate::host::HostResource>;

impl HostStorage {
    /// Host pages, as large as this machine's memory allows.
    pub fn host() -> Self {
        Self::new(crate::host::HostResource::new())
    }
}

/// Pages on a simulated device: addresses and accounting, no bytes.
pub type SimulatedStorage = ResourceStorage<crate::simulated::SimulatedResource>;

impl SimulatedStorage {
    /// Pages from a simulated device of `capacity` bytes.
    pub fn simulated(capacity: u64) -> Self {
        Self::new(crate::simulated::SimulatedResource::new(capacity))
    }
}
