//! `VmTable`: the ranges, chunks and mappings of one virtual-memory backend.
//!
//! Every backend (host, simulated, CUDA) keeps one, under its own lock, and
//! runs each call in two steps: `check_*` validates against the table and
//! says what to do (addresses, sizes, backend handles), the backend makes
//! its system or driver call, and only if that succeeded `add_*` /
//! `remove_*` / `commit_*` records it. So a refusal — by the table or by
//! the OS — changes nothing, and all three backends refuse exactly the same
//! calls with exactly the same errors, which is what lets one conformance
//! suite serve them all. Chunks are in `table_chunks.rs`, map and
//! unmap in `table_map.rs`, address checks in `table_access.rs`.
//!
//! Cost: create, map and release are O(1), an unmap or access spanning k
//! chunks O(k), but for the ranges, which are few and found by binary
//! search over their ids. Chunks live in a [`Slab`] (an id names its
//! slot), and each range's mappings in a [`Granules`] table indexed by
//! offset / granularity (an ordered map only for a range mapped past 2^18
//! granules); only address lookups (byte access, reserve, free) use an
//! ordered map, of range bases.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::StorageError;
use crate::physical::PhysicalMemory;
use crate::resource::MemInfo;
use crate::vm::granules::Granules;
use crate::vm::slab::Slab;
use crate::vm::{RangeId, VaRange, VirtualMemoryStats};

/// One live chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkEntry {
    pub(crate) bytes: u64,
    /// What the backend needs to reach it: the memfd offset on the host,
    /// the `CUmemGenericAllocationHandle` on CUDA, 0 when simulated.
    pub(crate) handle: u64,
    /// Where it is mapped: range and offset in it.
    pub(crate) mapped_at: Option<(RangeId, u64)>,
    /// Pooled, shareable or imported.
    pub(crate) kind: crate::vm::ChunkKind,
}

/// One live range.
#[derive(Debug)]
pub(crate) struct RangeEntry {
    pub(crate) id: RangeId,
    pub(crate) base: u64,
    pub(crate) len: u64,
    /// Every granule a mapping covers → its chunk (a chunk of k granules
    /// fills k entries; its `mapped_at` says where it starts).
    pub(crate) granules: Granules,
    /// Mappings in the range now.
    pub(crate) mappings: u64,
    pub(crate) mapped_bytes: u64,
}

/// Ranges, chunks, mappings and counters of one backend.
#[derive(Debug)]
pub(crate) struct VmTable {
    pub(crate) backend: &'static str,
    pub(crate) granularity: u64,
    /// log2 of the granularity: offset >> shift is a granule index.
    pub(crate) shift: u32,
    /// The physical memory chunks are claimed from: the backend's own, or
    /// the one its device's resource draws pages from (host, simulated),
    /// so pages and chunks share one capacity as on a GPU.
    pub(crate) memory: Arc<PhysicalMemory>,
    next_range: u64,
    /// Live ranges in id order (ids only grow, so a push keeps the order).
    pub(crate) ranges: Vec<RangeEntry>,
    /// Range base address → id, to find the range an address lies in.
    pub(crate) by_base: BTreeMap<u64, RangeId>,
    /// Live chunks; a [`ChunkId`](crate::vm::ChunkId) is the slab's id.
    pub(crate) chunks: Slab<ChunkEntry>,
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
            shift: granularity.trailing_zeros(),
            memory,
            next_range: 1,
            ranges: Vec::new(),
            by_base: BTreeMap::new(),
            chunks: Slab::default(),
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

    fn range_index(&self, id: RangeId) -> Result<usize, StorageError> {
        self.ranges
            .binary_search_by_key(&id, |r| r.id)
            .map_err(|_| StorageError::UnknownRange {
                backend: self.backend,
                range: id,
            })
    }

    pub(crate) fn range(&self, id: RangeId) -> Result<&RangeEntry, StorageError> {
        Ok(&self.ranges[self.range_index(id)?])
    }

    pub(crate) fn range_mut(&mut self, id: RangeId) -> Result<&mut RangeEntry, StorageError> {
        let index = self.range_index(id)?;
        Ok(&mut self.ranges[index])
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
        self.ranges.push(RangeEntry {
            id,
            base,
            len,
            granules: Granules::default(),
            mappings: 0,
            mapped_bytes: 0,
        });
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
        if r.mappings > 0 {
            return Err(StorageError::RangeInUse {
                range: id,
                mapped_chunks: r.mappings,
                mapped_bytes: r.mapped_bytes,
            });
        }
        self.range_info(id)
    }

    pub(crate) fn remove_range(&mut self, id: RangeId) {
        if let Ok(index) = self.range_index(id) {
            let r = self.ranges.remove(index);
            self.by_base.remove(&r.base);
            self.stats.ranges_freed += 1;
            self.stats.virtual_bytes -= r.len;
        }
    }
}
