//! PyTorch-style statistics: every quantity current, peak and cumulative.
//!
//! Kept incrementally on each reserve, free, page allocation and page
//! release, so reading them is O(1). `reset_peaks` sets each peak to the
//! current level (not zero), so a peak read after it covers exactly the
//! region that followed.

/// One quantity: current value, high-water mark, and cumulative totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Stat {
    /// Value now.
    pub current: u64,
    /// Highest value since creation or the last `reset_peaks`.
    pub peak: u64,
    /// Sum of every increase since creation.
    pub allocated: u64,
    /// Sum of every decrease since creation.
    pub freed: u64,
}

impl Stat {
    #[inline(always)]
    pub(crate) fn add(&mut self, amount: u64) {
        self.current = self.current.saturating_add(amount);
        self.allocated = self.allocated.saturating_add(amount);
        self.peak = self.peak.max(self.current);
    }

    #[inline(always)]
    pub(crate) fn sub(&mut self, amount: u64) {
        self.current = self.current.saturating_sub(amount);
        self.freed = self.freed.saturating_add(amount);
    }

    fn reset_peak(&mut self) {
        self.peak = self.current;
    }
}

/// Statistics of one manager, in PyTorch's vocabulary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PoolStats {
    /// Bytes of live slices (capacity, i.e. requested + alignment padding).
    pub allocated_bytes: Stat,
    /// Bytes of pages held (mapped or lazy).
    pub reserved_bytes: Stat,
    /// Bytes of live slices not yet released by the drop queue's drain
    /// (equal to `allocated_bytes` after every engine call).
    pub active_bytes: Stat,
    /// Requested bytes of live slices.
    pub requested_bytes: Stat,
    /// Live slices.
    pub allocation_count: Stat,
    /// Pages held.
    pub segment_count: Stat,
    /// Pages allocated from the storage so far (lazy pages count when mapped).
    pub storage_allocs: u64,
    /// Pages given back to the storage so far.
    pub storage_frees: u64,
    /// The largest free slice that can serve a reservation now.
    pub largest_free_block: u64,
    /// Bytes quarantined after a failed relocation wait (never reused).
    pub leaked_bytes: u64,
    /// Arena pools' physical chunks and address space (all zero without
    /// arenas). Their mapped chunks, and the shed chunks kept unmapped for
    /// reuse, are what `reserved_bytes` counts.
    pub chunks: ChunkStats,
}

/// What arena pools did with physical chunks and virtual addresses.
///
/// Serialized (feature `serde`) as the `arenas` object of `gpumem replay
/// --json` names them: the four driver counts as `chunk_creates`,
/// `chunk_maps`, `chunk_unmaps`, `chunk_releases`; `reuses` is left out
/// (it is part of `maps`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ChunkStats {
    /// Bytes of virtual address space the arenas' ranges reserve.
    pub virtual_bytes: u64,
    /// Bytes of mapped chunks no live slice touches (kept for reuse up to
    /// each pool's release threshold); part of `reserved_bytes`.
    pub cached_bytes: u64,
    /// Chunks created.
    #[cfg_attr(feature = "serde", serde(rename = "chunk_creates"))]
    pub creates: u64,
    /// Chunk mappings made (one per chunk, however many granules).
    #[cfg_attr(feature = "serde", serde(rename = "chunk_maps"))]
    pub maps: u64,
    /// Of `maps`, those of a shed chunk kept unmapped and mapped again
    /// for a later run instead of a new create.
    #[cfg_attr(feature = "serde", serde(skip))]
    pub reuses: u64,
    /// Chunks unmapped.
    #[cfg_attr(feature = "serde", serde(rename = "chunk_unmaps"))]
    pub unmaps: u64,
    /// Chunks released.
    #[cfg_attr(feature = "serde", serde(rename = "chunk_releases"))]
    pub releases: u64,
    /// Bytes of chunks created that the cache's bound had released
    /// shortly before: what shedding cost for nothing (the arenas' shed
    /// learner counts it).
    pub recreated_bytes: u64,
    /// Sheds skipped because recent re-creation showed they cost more
    /// than they saved (idle chunks stayed mapped for the next runs).
    pub sheds_skipped: u64,
}

impl std::ops::AddAssign for ChunkStats {
    /// Sum two managers' figures (a device's streams).
    fn add_assign(&mut self, other: Self) {
        self.virtual_bytes += other.virtual_bytes;
        self.cached_bytes += other.cached_bytes;
        self.creates += other.creates;
        self.maps += other.maps;
        self.reuses += other.reuses;
        self.unmaps += other.unmaps;
        self.releases += other.releases;
        self.recreated_bytes += other.recreated_bytes;
        self.sheds_skipped += other.sheds_skipped;
    }
}

impl ChunkStats {
    /// Driver calls made for chunks: creates + maps + unmaps + releases.
    pub fn driver_calls(&self) -> u64 {
        self.creates + self.maps + self.unmaps + self.releases
    }
}

impl PoolStats {
    /// Reserved bytes that hold no live slice (fragmentation + caching).
    pub fn inactive_bytes(&self) -> u64 {
        self.reserved_bytes
            .current
            .saturating_sub(self.allocated_bytes.current)
    }

    // `active_bytes` is only ever changed here, in `on_free` and by
    // `reset_peaks`, each time exactly as `allocated_bytes`: so the fields
    // that changed are copied rather than computed again (no second round
    // of saturating adds and a max; the unchanged `freed` is equal already).
    #[inline(always)]
    pub(crate) fn on_reserve(&mut self, capacity: u64, requested: u64) {
        let bytes = &mut self.allocated_bytes;
        bytes.add(capacity);
        let (current, peak, allocated) = (bytes.current, bytes.peak, bytes.allocated);
        let active = &mut self.active_bytes;
        (active.current, active.peak, active.allocated) = (current, peak, allocated);
        self.requested_bytes.add(requested);
        self.allocation_count.add(1);
    }

    #[inline(always)]
    pub(crate) fn on_free(&mut self, capacity: u64, requested: u64) {
        let bytes = &mut self.allocated_bytes;
        bytes.sub(capacity);
        let (current, freed) = (bytes.current, bytes.freed);
        let active = &mut self.active_bytes;
        (active.current, active.freed) = (current, freed);
        self.requested_bytes.sub(requested);
        self.allocation_count.sub(1);
    }

    pub(crate) fn on_page(&mut self, size: u64) {
        self.reserved_bytes.add(size);
        self.segment_count.add(1);
    }

    pub(crate) fn on_page_release(&mut self, size: u64) {
        self.reserved_bytes.sub(size);
        self.segment_count.sub(1);
    }

    /// Set every peak to its current value.
    pub fn reset_peaks(&mut self) {
        for stat in [
            &mut self.allocated_bytes,
            &mut self.reserved_bytes,
            &mut self.active_bytes,
            &mut self.requested_bytes,
            &mut self.allocation_count,
            &mut self.segment_count,
        ] {
            stat.reset_peak();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_peaks_lowers_each_peak_to_the_current_level_not_zero() {
        let mut stats = PoolStats::default();
        stats.on_page(100);
        stats.on_reserve(64, 60);
        stats.on_reserve(32, 30);
        stats.on_free(64, 60);
        assert_eq!(stats.allocated_bytes.peak, 96);
        stats.reset_peaks();
        assert_eq!(stats.allocated_bytes.peak, 32);
        assert_eq!(stats.requested_bytes.current, 30);
        assert_eq!(stats.allocated_bytes.allocated, 96);
        assert_eq!(stats.allocated_bytes.freed, 64);
        assert_eq!(stats.inactive_bytes(), 68);
    }
}
