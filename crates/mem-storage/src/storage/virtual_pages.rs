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
//!
//! Cost: the pages are few and sit in id order (ids only grow), found by
//! binary search; each page's mappings are a [`Granules`] table indexed by
//! offset / granularity, and the chunks a set under the cheap
//! [`IdBuildHasher`]. So create, map, unmap and release add O(1) work to
//! the virtual memory's own; giving everything back (`release.rs`) is
//! linear.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::StorageError;
use crate::id::StorageId;
use crate::id::hash::IdBuildHasher;
use crate::vm::granules::Granules;
use crate::vm::{ChunkId, VaRange, VirtualMemory};

mod release;

/// One virtual page: its range and what is mapped in it.
#[derive(Debug)]
pub(crate) struct VirtualPage {
    id: StorageId,
    pub(crate) range: VaRange,
    /// Granule (offset / granularity) → chunk mapped there.
    mapped: Granules,
    /// Chunks mapped in the page now.
    mapped_chunks: u64,
}

/// The virtual pages and chunks of one storage.
#[derive(Debug)]
pub(crate) struct VirtualPages {
    pub(crate) vm: Arc<dyn VirtualMemory>,
    /// Live pages in id order.
    live: Vec<VirtualPage>,
    /// Deallocated pages whose ranges go back at the next flush.
    pending: Vec<(StorageId, VaRange)>,
    /// Chunks created and not released, with their bytes.
    chunks: HashMap<ChunkId, u64, IdBuildHasher>,
    /// The virtual memory's granularity (fixed for its life).
    granularity: u64,
    /// Bytes of the chunks in `chunks`.
    pub(crate) chunk_bytes: u64,
    /// Bytes of the ranges in `live` and `pending`.
    pub(crate) virtual_bytes: u64,
}

impl VirtualPages {
    pub(crate) fn new(vm: Arc<dyn VirtualMemory>) -> Self {
        Self {
            granularity: vm.granularity(),
            vm,
            live: Vec::new(),
            pending: Vec::new(),
            chunks: HashMap::default(),
            chunk_bytes: 0,
            virtual_bytes: 0,
        }
    }

    fn index(&self, id: StorageId) -> Result<usize, StorageError> {
        self.live
            .binary_search_by_key(&id, |p| p.id)
            .map_err(|_| StorageError::UnknownId { id })
    }

    /// Live page `id`, if it is one of this storage's virtual pages.
    pub(crate) fn page(&self, id: StorageId) -> Option<&VirtualPage> {
        self.index(id).ok().map(|i| &self.live[i])
    }

    pub(crate) fn is_live(&self, id: StorageId) -> bool {
        self.index(id).is_ok()
    }

    /// Reserve a page of at least `size` bytes as `id`, which must be
    /// larger than every id reserved before (the storage's ids only grow).
    pub(crate) fn reserve(&mut self, id: StorageId, size: u64) -> Result<u64, StorageError> {
        if self.live.last().is_some_and(|p| p.id >= id) {
            return Err(StorageError::InvalidArgument {
                parameter: "virtual page id",
                value: id.0,
                expected: "an id above every virtual page's before it",
            });
        }
        let g = self.granularity;
        let bytes = size.checked_next_multiple_of(g).filter(|&b| b > 0).ok_or(
            StorageError::InvalidArgument {
                parameter: "virtual page size",
                value: size,
                expected: "a positive size whose granule-rounded value fits in 64 bits",
            },
        )?;
        let range = self.vm.reserve_range(bytes)?;
        self.virtual_bytes += range.len;
        self.live.push(VirtualPage {
            id,
            range,
            mapped: Granules::default(),
            mapped_chunks: 0,
        });
        Ok(range.len)
    }

    /// Create a chunk of `bytes` (the virtual memory checks the size).
    pub(crate) fn create_chunk(&mut self, bytes: u64) -> Result<ChunkId, StorageError> {
        let chunk = self.vm.create_chunk(bytes)?;
        self.chunks.insert(chunk, bytes);
        self.chunk_bytes += bytes;
        Ok(chunk)
    }

    pub(crate) fn release_chunk(&mut self, chunk: ChunkId) -> Result<(), StorageError> {
        let Some(&bytes) = self.chunks.get(&chunk) else {
            return Err(StorageError::UnknownChunk {
                backend: self.vm.backend(),
                chunk,
            });
        };
        self.vm.release_chunk(chunk)?;
        self.chunks.remove(&chunk);
        self.chunk_bytes -= bytes;
        Ok(())
    }

    pub(crate) fn map(
        &mut self,
        id: StorageId,
        offset: u64,
        chunk: ChunkId,
    ) -> Result<(), StorageError> {
        let Some(&bytes) = self.chunks.get(&chunk) else {
            return Err(StorageError::UnknownChunk {
                backend: self.vm.backend(),
                chunk,
            });
        };
        let g = self.granularity;
        let index = self.index(id)?;
        let page = &mut self.live[index];
        self.vm.map(page.range.id, offset, chunk)?;
        // The map succeeded, so `offset` and the chunk's bytes are
        // multiples of the granularity.
        page.mapped.insert(offset / g, bytes / g, chunk);
        page.mapped_chunks += 1;
        Ok(())
    }

    pub(crate) fn unmap(&mut self, id: StorageId, offset: u64) -> Result<ChunkId, StorageError> {
        let g = self.granularity;
        let index = self.index(id)?;
        let page = &mut self.live[index];
        // The mapping must start at `offset` (a chunk is unmapped whole).
        let granule = offset / g;
        let mapped = offset
            .is_multiple_of(g)
            .then(|| page.mapped.get(granule))
            .flatten()
            .filter(|&c| granule == 0 || page.mapped.get(granule - 1) != Some(c));
        let Some((chunk, bytes)) = mapped.map(|c| (c, self.chunks.get(&c).copied().unwrap_or(g)))
        else {
            return Err(StorageError::NotMapped {
                range: page.range.id,
                offset,
                bytes: g,
                at: offset,
            });
        };
        self.vm.unmap(page.range.id, offset, bytes)?;
        page.mapped.remove(granule, bytes / g);
        page.mapped_chunks -= 1;
        Ok(chunk)
    }

    /// Queue page `id` for its range's release; refused while mapped.
    pub(crate) fn dealloc(&mut self, id: StorageId) -> Result<(), StorageError> {
        let index = self.index(id)?;
        let page = &self.live[index];
        if page.mapped_chunks > 0 {
            let chunks = page.mapped_chunks;
            return Err(StorageError::RangeInUse {
                range: page.range.id,
                mapped_chunks: chunks,
                mapped_bytes: page.mapped.mapped_granules() * self.granularity,
            });
        }
        let range = self.live.remove(index).range;
        self.pending.push((id, range));
        Ok(())
    }
}
