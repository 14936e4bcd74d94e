//! [`StatsResource`] over a [`VirtualMemory`]: counts of what went through
//! it, lock-free.
//!
//! [`StatsResource::virtual_stats`] says what passed through this adaptor
//! (one pool's share of a shared backend, or one phase after
//! [`StatsResource::reset_virtual_peaks`]); `vm_stats()` stays the
//! backend's own totals, forwarded. Counters are atomics, as for
//! allocations, so a monitor never blocks a map. Chunk and range sizes are
//! asked of the backend *before* a release, free or map (sizes never change
//! and ids are never reused, so the answer is right if the call succeeds).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::adaptors::stats::StatsResource;
use crate::error::StorageError;
use crate::id::DevicePtr;
use crate::vm::{ChunkId, RangeId, VaRange, VirtualMemory, VirtualMemoryStats};

/// The atomics behind [`StatsResource::virtual_stats`], one per field.
#[derive(Debug, Default)]
pub(crate) struct VmCounters {
    ranges_reserved: AtomicU64,
    ranges_freed: AtomicU64,
    virtual_bytes: AtomicU64,
    chunks_created: AtomicU64,
    chunks_released: AtomicU64,
    physical_bytes: AtomicU64,
    peak_physical_bytes: AtomicU64,
    maps: AtomicU64,
    unmaps: AtomicU64,
    mapped_bytes: AtomicU64,
    peak_mapped_bytes: AtomicU64,
    refused_calls: AtomicU64,
}

/// Add `n` to `level` and raise `peak` to the new level.
fn rise(level: &AtomicU64, peak: &AtomicU64, n: u64) {
    let now = level.fetch_add(n, Relaxed) + n;
    peak.fetch_max(now, Relaxed);
}

/// Take `n` from `level`, saturating: calls made around this adaptor (on a
/// shared backend) must not wrap it.
fn fall(level: &AtomicU64, n: u64) {
    // The closure always returns `Some`, so the update cannot fail.
    let _ = level.fetch_update(Relaxed, Relaxed, |v| Some(v.saturating_sub(n)));
}

impl VmCounters {
    fn count<T>(
        &self,
        result: Result<T, StorageError>,
        ok: impl FnOnce(&T),
    ) -> Result<T, StorageError> {
        match &result {
            Ok(value) => ok(value),
            Err(_) => {
                self.refused_calls.fetch_add(1, Relaxed);
            }
        }
        result
    }
}

impl<R> StatsResource<R> {
    /// What passed through this adaptor's virtual-memory calls.
    pub fn virtual_stats(&self) -> VirtualMemoryStats {
        let c = &self.vm;
        VirtualMemoryStats {
            ranges_reserved: c.ranges_reserved.load(Relaxed),
            ranges_freed: c.ranges_freed.load(Relaxed),
            virtual_bytes: c.virtual_bytes.load(Relaxed),
            chunks_created: c.chunks_created.load(Relaxed),
            chunks_released: c.chunks_released.load(Relaxed),
            physical_bytes: c.physical_bytes.load(Relaxed),
            peak_physical_bytes: c.peak_physical_bytes.load(Relaxed),
            maps: c.maps.load(Relaxed),
            unmaps: c.unmaps.load(Relaxed),
            mapped_bytes: c.mapped_bytes.load(Relaxed),
            peak_mapped_bytes: c.peak_mapped_bytes.load(Relaxed),
            refused_calls: c.refused_calls.load(Relaxed),
            driver: Default::default(),
        }
    }

    /// Lower the physical and mapped peaks to the current levels.
    pub fn reset_virtual_peaks(&self) {
        let c = &self.vm;
        c.peak_physical_bytes
            .store(c.physical_bytes.load(Relaxed), Relaxed);
        c.peak_mapped_bytes
            .store(c.mapped_bytes.load(Relaxed), Relaxed);
    }
}

impl<V: VirtualMemory> VirtualMemory for StatsResource<V> {
    fn reserve_range(&self, bytes: u64) -> Result<VaRange, StorageError> {
        let c = &self.vm;
        c.count(self.inner().reserve_range(bytes), |r| {
            c.ranges_reserved.fetch_add(1, Relaxed);
            c.virtual_bytes.fetch_add(r.len, Relaxed);
        })
    }

    fn free_range(&self, range: RangeId) -> Result<(), StorageError> {
        let c = &self.vm;
        let len = self.inner().range_info(range).map_or(0, |r| r.len);
        c.count(self.inner().free_range(range), |()| {
            c.ranges_freed.fetch_add(1, Relaxed);
            fall(&c.virtual_bytes, len);
        })
    }

    fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
        let c = &self.vm;
        c.count(self.inner().create_chunk(bytes), |_| {
            c.chunks_created.fetch_add(1, Relaxed);
            rise(&c.physical_bytes, &c.peak_physical_bytes, bytes);
        })
    }

    fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError> {
        let c = &self.vm;
        let bytes = self.inner().chunk_bytes(chunk).unwrap_or(0);
        c.count(self.inner().release_chunk(chunk), |()| {
            c.chunks_released.fetch_add(1, Relaxed);
            fall(&c.physical_bytes, bytes);
        })
    }

    fn map(&self, range: RangeId, offset: u64, chunk: ChunkId) -> Result<DevicePtr, StorageError> {
        let c = &self.vm;
        let bytes = self.inner().chunk_bytes(chunk).unwrap_or(0);
        c.count(self.inner().map(range, offset, chunk), |_| {
            c.maps.fetch_add(1, Relaxed);
            rise(&c.mapped_bytes, &c.peak_mapped_bytes, bytes);
        })
    }

    fn unmap(&self, range: RangeId, offset: u64, bytes: u64) -> Result<Vec<ChunkId>, StorageError> {
        let c = &self.vm;
        c.count(self.inner().unmap(range, offset, bytes), |chunks| {
            c.unmaps.fetch_add(chunks.len() as u64, Relaxed);
            fall(&c.mapped_bytes, bytes);
        })
    }

    crate::forward_virtual_memory!(inner);
}
