//! [`ComputeStorage`] for a [`ResourceStorage`]: pages are resource
//! allocations on the storage's stream, views are checked before any
//! address is formed, virtual pages go to `virtual_memory.rs`.

use crate::error::StorageError;
use crate::id::{StorageHandle, StorageId};
use crate::resource::{DeviceResource, MemInfo};
use crate::storage::{ComputeStorage, DeviceView};
use crate::vm::ChunkId;

use super::{Page, ResourceStorage};

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
