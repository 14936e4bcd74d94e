//! `VmTable`: the ranges, chunks and mappings of one virtual-memory backend.
//!
//! Every backend (host, simulated, CUDA) keeps one, under its own lock, and
//! runs each call in two steps: `check_*` validates against the table and
//! says what to do (addresses, sizes, backend handles), the backend makes
//! its system or driver call, and only if that succeeded `add_*` /
//! `remove_*` / `commit_*` records it. So a refusal — by the table or by
//! the OS — changes nothing, and all three backends refuse exactly the same
//! calls with exactly the same errors, which is what lets one conformance
//! suite serve them all. Map, unmap and address checks are in
//! `table_map.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::StorageError;
use crate::physical::{ChunkClaim, PhysicalMemory};
use crate::resource::MemInfo;
use crate::vm::{ChunkId, RangeId, VaRange, VirtualMemoryStats};

/// One live chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkEntry {
    pub(crate) bytes: u64,
    /// What the backend needs to reach it: the memfd offset on the host,
    /// the `CUmemGenericAllocationHandle` on CUDA, 0 when simulated.
    pub(crate) handle: u64,
    /// Where it is mapped: range and offset in it.
    pub(crate) mapped_at: Option<(RangeId, u64)>,
}

/// One live range.
#[derive(Debug, Default)]
pub(crate) struct RangeEntry {
    pub(crate) base: u64,
    pub(crate) len: u64,
    /// Mappings: offset in the range → chunk (its size is in `chunks`).
    pub(crate) mapped: BTreeMap<u64, ChunkId>,
    pub(crate) mapped_bytes: u64,
}

/// Ranges, chunks, mappings and counters of one backend.
#[derive(Debug)]
pub(crate) struct VmTable {
    pub(crate) backend: &'static str,
    pub(crate) granularity: u64,
    /// The physical memory chunks are claimed from: the backend's own, or
    /// the one its device's resource draws pages from (host, simulated),
    /// so pages and chunks share one capacity as on a GPU.
    pub(crate) memory: Arc<PhysicalMemory>,
    next_range: u64,
    next_chunk: u64,
    pub(crate) ranges: BTreeMap<RangeId, RangeEntry>,
    /// Range base address → id, to find the range an address lies in.
    pub(crate) by_base: BTreeMap<u64, RangeId>,
    pub(crate) chunks: BTreeMap<ChunkId, ChunkEntry>,
    pub(crate) stats: VirtualMemoryStats,
}

impl VmTable {
    /// `granularity` must already be a power of two (constructors check).
    pub(crate) fn new(
        backend: &'static str,
        granularity: u64,
        memory: Arc<PhysicalMemory>,
    ) -> Self {
        Self {
            backend,
            granularity,
            memory,
            next_range: 1,
            next_chunk: 1,
            ranges: BTreeMap::new(),
            by_base: BTreeMap::new(),
            chunks: BTreeMap::new(),
            stats: VirtualMemoryStats::default(),
        }
    }

    /// Count a refused lifecycle call; pass the result on.
    pub(crate) fn counted<T>(
        &mut self,
        result: Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        if result.is_err() {
            self.stats.refused_calls += 1;
        }
        result
    }

    /// Free and total physical memory: what chunks *and* any pages drawn
    /// from the same memory leave free.
    pub(crate) fn mem_info(&self) -> MemInfo {
        self.memory.mem_info()
    }

    /// `value` must be a multiple of the granularity, and positive unless
    /// it is an offset.
    pub(crate) fn granular(&self, parameter: &'static str, value: u64) -> Result<(), StorageError> {
        let positive = parameter == "offset" || value > 0;
        if positive && value.is_multiple_of(self.granularity) {
            Ok(())
        } else {
            Err(StorageError::NotGranular {
                backend: self.backend,
                parameter,
                value,
                granularity: self.granularity,
            })
        }
    }

    pub(crate) fn range(&self, id: RangeId) -> Result<&RangeEntry, StorageError> {
        self.ranges.get(&id).ok_or(StorageError::UnknownRange {
            backend: self.backend,
            range: id,
        })
    }

    pub(crate) fn range_info(&self, id: RangeId) -> Result<VaRange, StorageError> {
        let r = self.range(id)?;
        Ok(VaRange {
            id,
            base: crate::DevicePtr(r.base),
            len: r.len,
        })
    }

    pub(crate) fn add_range(&mut self, base: u64, len: u64) -> VaRange {
        let id = RangeId(self.next_range);
        self.next_range += 1;
        self.ranges.insert(
            id,
            RangeEntry {
                base,
                len,
                ..RangeEntry::default()
            },
        );
        self.by_base.insert(base, id);
        self.stats.ranges_reserved += 1;
        self.stats.virtual_bytes += len;
        VaRange {
            id,
            base: crate::DevicePtr(base),
            len,
        }
    }

    /// The range to free, if nothing is mapped in it.
    pub(crate) fn check_free(&self, id: RangeId) -> Result<VaRange, StorageError> {
        let r = self.range(id)?;
        if !r.mapped.is_empty() {
            return Err(StorageError::RangeInUse {
                range: id,
                mapped_chunks: r.mapped.len() as u64,
                mapped_bytes: r.mapped_bytes,
            });
        }
        self.range_info(id)
    }

    pub(crate) fn remove_range(&mut self, id: RangeId) {
        if let Some(r) = self.ranges.remove(&id) {
            self.by_base.remove(&r.base);
            self.stats.ranges_freed += 1;
            self.stats.virtual_bytes -= r.len;
        }
    }

    /// Whether a chunk of `bytes` may be created now, and if so its bytes,
    /// claimed: larger than the whole memory is `TooBig`, larger than what
    /// is free now (pages included, when shared) `OutOfMemory`. The claim
    /// goes back on drop unless [`VmTable::add_chunk`] records the chunk.
    pub(crate) fn check_create(&self, bytes: u64) -> Result<ChunkClaim, StorageError> {
        self.granular("bytes", bytes)?;
        ChunkClaim::new(&self.memory, self.backend, bytes)
    }

    /// Record a chunk the backend made with the bytes `claim` holds.
    pub(crate) fn add_chunk(&mut self, claim: ChunkClaim, handle: u64) -> ChunkId {
        let bytes = claim.keep();
        let id = ChunkId(self.next_chunk);
        self.next_chunk += 1;
        let entry = ChunkEntry {
            bytes,
            handle,
            mapped_at: None,
        };
        self.chunks.insert(id, entry);
        let s = &mut self.stats;
        s.chunks_created += 1;
        s.physical_bytes += bytes;
        s.peak_physical_bytes = s.peak_physical_bytes.max(s.physical_bytes);
        id
    }

    pub(crate) fn chunk(&self, id: ChunkId) -> Result<ChunkEntry, StorageError> {
        self.chunks
            .get(&id)
            .copied()
            .ok_or(StorageError::UnknownChunk {
                backend: self.backend,
                chunk: id,
            })
    }

    /// The chunk to release, if it is not mapped.
    pub(crate) fn check_release(&self, id: ChunkId) -> Result<ChunkEntry, StorageError> {
        let c = self.chunk(id)?;
        match c.mapped_at {
            Some((range, offset)) => Err(StorageError::ChunkMapped {
                chunk: id,
                range,
                offset,
            }),
            None => Ok(c),
        }
    }

    pub(crate) fn remove_chunk(&mut self, id: ChunkId) {
        if let Some(c) = self.chunks.remove(&id) {
            self.stats.chunks_released += 1;
            self.stats.physical_bytes -= c.bytes;
            self.memory.release(c.bytes);
        }
    }
}
