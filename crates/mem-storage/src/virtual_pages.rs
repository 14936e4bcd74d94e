//! Virtual pages of a [`crate::ResourceStorage`]: ranges of a
//! [`VirtualMemory`] that the pool engine carves like pages, with physical
//! chunks mapped only where it asks.
//!
//! Why the storage keeps this table rather than the engine: a virtual page
//! must resolve views, move bytes and go back on drop exactly like a
//! resource page, and only the storage sees both. It also keeps the chunks
//! it created, so `bytes_allocated` counts physical memory (what a budget
//! and a pressure trigger care about) and a dropped storage leaves nothing
//! mapped or created behind — the virtual memory is shared by every stream
//! of a device, so its own drop comes too late.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use crate::error::StorageError;
use crate::id::StorageId;
use crate::vm::{ChunkId, VaRange, VirtualMemory};

/// One virtual page: its range and what is mapped in it.
#[derive(Debug)]
pub(crate) struct VirtualPage {
    pub(crate) range: VaRange,
    /// Offset → chunk mapped there.
    mapped: BTreeMap<u64, ChunkId>,
}

/// The virtual pages and chunks of one storage.
#[derive(Debug)]
pub(crate) struct VirtualPages {
    pub(crate) vm: Arc<dyn VirtualMemory>,
    pub(crate) live: HashMap<StorageId, VirtualPage>,
    /// Deallocated pages whose ranges go back at the next flush.
    pending: Vec<(StorageId, VaRange)>,
    chunks: HashSet<ChunkId>,
    /// Bytes of the chunks in `chunks`.
    pub(crate) chunk_bytes: u64,
    /// Bytes of the ranges in `live` and `pending`.
    pub(crate) virtual_bytes: u64,
}

impl VirtualPages {
    pub(crate) fn new(vm: Arc<dyn VirtualMemory>) -> Self {
        Self {
            vm,
            live: HashMap::new(),
            pending: Vec::new(),
            chunks: HashSet::new(),
            chunk_bytes: 0,
            virtual_bytes: 0,
        }
    }

    pub(crate) fn reserve(&mut self, id: StorageId, size: u64) -> Result<u64, StorageError> {
        let g = self.vm.granularity();
        let bytes = size.checked_next_multiple_of(g).filter(|&b| b > 0).ok_or(
            StorageError::InvalidArgument {
                parameter: "virtual page size",
                value: size,
                expected: "a positive size whose granule-rounded value fits in 64 bits",
            },
        )?;
        let range = self.vm.reserve_range(bytes)?;
        self.virtual_bytes += range.len;
        self.live.insert(
            id,
            VirtualPage {
                range,
                mapped: BTreeMap::new(),
            },
        );
        Ok(range.len)
    }

    pub(crate) fn create_chunk(&mut self) -> Result<ChunkId, StorageError> {
        let g = self.vm.granularity();
        let chunk = self.vm.create_chunk(g)?;
        self.chunks.insert(chunk);
        self.chunk_bytes += g;
        Ok(chunk)
    }

    pub(crate) fn release_chunk(&mut self, chunk: ChunkId) -> Result<(), StorageError> {
        if !self.chunks.contains(&chunk) {
            return Err(StorageError::UnknownChunk {
                backend: self.vm.backend(),
                chunk,
            });
        }
        self.vm.release_chunk(chunk)?;
        self.chunks.remove(&chunk);
        self.chunk_bytes -= self.vm.granularity();
        Ok(())
    }

    fn page_mut(&mut self, id: StorageId) -> Result<&mut VirtualPage, StorageError> {
        self.live.get_mut(&id).ok_or(StorageError::UnknownId { id })
    }

    pub(crate) fn map(
        &mut self,
        id: StorageId,
        offset: u64,
        chunk: ChunkId,
    ) -> Result<(), StorageError> {
        if !self.chunks.contains(&chunk) {
            return Err(StorageError::UnknownChunk {
                backend: self.vm.backend(),
                chunk,
            });
        }
        let vm = self.vm.clone();
        let page = self.page_mut(id)?;
        vm.map(page.range.id, offset, chunk)?;
        page.mapped.insert(offset, chunk);
        Ok(())
    }

    pub(crate) fn unmap(&mut self, id: StorageId, offset: u64) -> Result<ChunkId, StorageError> {
        let vm = self.vm.clone();
        let g = vm.granularity();
        let page = self.page_mut(id)?;
        let Some(&chunk) = page.mapped.get(&offset) else {
            return Err(StorageError::NotMapped {
                range: page.range.id,
                offset,
                bytes: g,
                at: offset,
            });
        };
        vm.unmap(page.range.id, offset, g)?;
        page.mapped.remove(&offset);
        Ok(chunk)
    }

    /// Queue page `id` for its range's release; refused while mapped.
    pub(crate) fn dealloc(&mut self, id: StorageId) -> Result<(), StorageError> {
        let page = self.live.get(&id).ok_or(StorageError::UnknownId { id })?;
        if !page.mapped.is_empty() {
            let chunks = page.mapped.len() as u64;
            return Err(StorageError::RangeInUse {
                range: page.range.id,
                mapped_chunks: chunks,
                mapped_bytes: chunks * self.vm.granularity(),
            });
        }
        let range = page.range;
        self.live.remove(&id);
        self.pending.push((id, range));
        Ok(())
    }

    /// Free the queued ranges; one that fails stays queued.
    pub(crate) fn flush(&mut self) -> Result<(), StorageError> {
        let mut first = None;
        let mut kept = Vec::new();
        for (id, range) in std::mem::take(&mut self.pending) {
            match self.vm.free_range(range.id) {
                Ok(()) => self.virtual_bytes -= range.len,
                Err(err) => {
                    tracing::warn!(%id, %err, "virtual range free failed; it stays queued");
                    first.get_or_insert(err);
                    kept.push((id, range));
                }
            }
        }
        self.pending = kept;
        first.map_or(Ok(()), Err)
    }

    /// Unmap, release and free everything (the storage is going away).
    pub(crate) fn release_all(&mut self) {
        let ids: Vec<_> = self.live.keys().copied().collect();
        for id in ids {
            let offsets: Vec<_> = self.live[&id].mapped.keys().copied().collect();
            for offset in offsets {
                if let Err(err) = self.unmap(id, offset) {
                    tracing::error!(%id, offset, %err, "chunk could not be unmapped on drop");
                }
            }
            if let Err(err) = self.dealloc(id) {
                tracing::error!(%id, %err, "virtual page could not be freed on drop");
            }
        }
        let chunks: Vec<_> = self.chunks.iter().copied().collect();
        for chunk in chunks {
            if let Err(err) = self.release_chunk(chunk) {
                tracing::error!(%chunk, %err, "chunk could not be released on drop");
            }
        }
        if let Err(err) = self.flush() {
            tracing::error!(%err, "virtual ranges could not be freed on drop");
        }
    }
}
