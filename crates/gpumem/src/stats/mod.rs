//! PyTorch-style statistics for a stream and for the whole device.
//!
//! The pool engine keeps exact per-manager counters ([`PoolStats`]), and
//! they stay the source: a stream's statistics are its engine's counters,
//! read when someone asks, plus the little the engine does not keep
//! (`StreamTally`). Nothing is copied or folded per call.
//!
//! A device has one manager per stream, and the device's peak is not the
//! sum of the streams' peaks (they need not peak together). With **one
//! stream** the engine's peaks are the stream's and the device's, so a call
//! pays for no peak at all. With **several**, the facade resets the
//! engine's peaks at the start of every call it makes (first keeping them
//! in the stream's tally), so after the call they are the call's own peaks,
//! and folds those into the device's (the other streams' current levels
//! plus this call's peak; see `device_stats.rs`, which does it without a
//! device-wide lock). The device's levels and totals are summed over the
//! streams when read. That makes every peak exact for calls made from one
//! thread, and never missed by more than the overlap of concurrent calls.
//!
//! `inactive` (reserved but not allocated: cached plus fragmented bytes) is
//! derived, so its level is exact and its peak and totals are sampled at
//! the end of each call and at each read.

pub(crate) mod device_stats;
#[cfg(all(test, loom))]
mod device_stats_loom;
mod report;
pub(crate) mod sharing;
pub(crate) mod waits;

use mem_pools::{ChunkStats, PoolStats, Stat};

pub use report::{DeviceReport, StreamReport};
pub use sharing::SharingStats;
pub use waits::WaitStats;

/// Statistics in PyTorch's vocabulary (`torch.cuda.memory_stats()`).
///
/// Each [`Stat`] has `current`, `peak` (since creation or the last
/// `reset_peak_stats`), `allocated` (the total of every increase) and
/// `freed` (the total of every decrease).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes of live slices, padding included.
    pub allocated_bytes: Stat,
    /// Bytes of pages held from the device.
    pub reserved_bytes: Stat,
    /// Bytes of slices whose handles are alive or whose free is not yet processed.
    pub active_bytes: Stat,
    /// Reserved bytes not allocated: cached free slices and fragmentation.
    pub inactive_bytes: Stat,
    /// Bytes asked for by live allocations (no padding).
    pub requested_bytes: Stat,
    /// Live allocations (PyTorch's `allocation`; also the active count).
    pub allocation_count: Stat,
    /// Pages held (PyTorch's `segment`).
    pub segment_count: Stat,
    /// Pages allocated from the storage so far (`num_device_alloc`).
    pub storage_allocs: u64,
    /// Pages given back to the storage so far (`num_device_free`).
    pub storage_frees: u64,
    /// Reservations retried after cleanup and reclaim (`num_alloc_retries`).
    pub num_alloc_retries: u64,
    /// Reservations that failed with out-of-memory (`num_ooms`).
    pub num_ooms: u64,
    /// The largest free slice that can serve a reservation now (the largest
    /// of any one stream: a stream cannot use another's free slices).
    pub largest_free_block: u64,
    /// Bytes quarantined after a failed relocation wait (never reused).
    pub leaked_bytes: u64,
    /// Arena pools: virtual bytes, cached chunk bytes (inside
    /// `reserved_bytes`, which counts mapped chunks), and the driver calls
    /// made for chunks (create / map / unmap / release). Zero without arenas.
    pub chunks: ChunkStats,
    /// The device's driver calls and their modeled time (what a GPU would
    /// pay on the host and simulated backends; calls only on CUDA). The
    /// device's figure: zero in a stream's statistics.
    pub driver: mem_storage::DriverTime,
    /// How often the host waited for the whole device or one stream, and
    /// why. The device's figure: zero in a stream's statistics.
    pub waits: WaitStats,
    /// Shareable buffers made and other processes' buffers imported: memory
    /// outside every pool, not in `reserved_bytes`. The device's figure:
    /// zero in a stream's statistics.
    pub sharing: SharingStats,
}

/// How much of what is reserved does not serve live data, and in what shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fragmentation {
    /// Bytes of pages held.
    pub reserved_bytes: u64,
    /// Bytes asked for by live allocations.
    pub live_bytes: u64,
    /// `reserved − live`: padding, cached free slices and holes.
    pub unused_bytes: u64,
    /// Reserved bytes in free slices (`reserved − allocated`).
    pub free_bytes: u64,
    /// The largest free slice of any stream.
    pub largest_free_block: u64,
    /// `largest free block ÷ free bytes`: 1.0 when the free memory is one
    /// block (or there is none), near 0 when it is shattered into slivers.
    pub largest_free_ratio: f64,
}

impl MemoryStats {
    /// Fragmentation figures derived from the current levels.
    pub fn fragmentation(&self) -> Fragmentation {
        let reserved = self.reserved_bytes.current;
        let free = self.inactive_bytes.current;
        let largest = self.largest_free_block.min(free);
        Fragmentation {
            reserved_bytes: reserved,
            live_bytes: self.requested_bytes.current,
            unused_bytes: reserved.saturating_sub(self.requested_bytes.current),
            free_bytes: free,
            largest_free_block: self.largest_free_block,
            largest_free_ratio: if free == 0 {
                1.0
            } else {
                largest as f64 / free as f64
            },
        }
    }

    /// Lower every peak to its current level (`reset_peak_memory_stats`).
    pub fn reset_peaks(&mut self) {
        for stat in self.stats_mut() {
            stat.peak = stat.current;
        }
        self.inactive_bytes.peak = self.inactive_bytes.current;
    }

    /// The six levels the engine counts (not inactive, which is derived).
    pub(crate) fn stats(&self) -> [&Stat; 6] {
        [
            &self.allocated_bytes,
            &self.reserved_bytes,
            &self.active_bytes,
            &self.requested_bytes,
            &self.allocation_count,
            &self.segment_count,
        ]
    }

    pub(crate) fn stats_mut(&mut self) -> [&mut Stat; 6] {
        [
            &mut self.allocated_bytes,
            &mut self.reserved_bytes,
            &mut self.active_bytes,
            &mut self.requested_bytes,
            &mut self.allocation_count,
            &mut self.segment_count,
        ]
    }
}

fn pool_stats(p: &PoolStats) -> [&Stat; 6] {
    [
        &p.allocated_bytes,
        &p.reserved_bytes,
        &p.active_bytes,
        &p.requested_bytes,
        &p.allocation_count,
        &p.segment_count,
    ]
}

/// Move a sampled stat to `level`, counting the change in its totals.
///
/// Only a rise can lift the peak: a stat's peak is never below its current
/// level (it starts at zero and a reset lowers it to the level), so a fall
/// leaves it as it is — one compare less on every call.
#[inline]
fn sample(stat: &mut Stat, level: u64) {
    let current = stat.current;
    if level > current {
        stat.allocated += level - current;
        stat.peak = stat.peak.max(level);
    } else {
        stat.freed += current - level;
    }
    stat.current = level;
}

/// What a stream's statistics add to its engine's counters.
#[derive(Debug, Default)]
pub(crate) struct StreamTally {
    /// Inactive bytes, sampled at the end of every call and at every read
    /// (the engine derives no totals for it).
    pub(crate) inactive: Stat,
    /// The stream's peaks kept before each per-call reset of the engine's
    /// (devices with several streams; see the module). With one stream the
    /// engine's own peaks are the stream's and these stay at or below them.
    pub(crate) peaks: [u64; 6],
    pub(crate) num_alloc_retries: u64,
    pub(crate) num_ooms: u64,
}

impl StreamTally {
    /// Sample inactive bytes from the engine's counters: O(1), what every
    /// call pays.
    #[inline]
    pub(crate) fn sample_inactive(&mut self, engine: &PoolStats) {
        sample(&mut self.inactive, engine.inactive_bytes());
    }

    /// Keep the engine's peaks in the stream's before they are reset.
    pub(crate) fn keep_peaks(&mut self, engine: &PoolStats) {
        for (kept, stat) in self.peaks.iter_mut().zip(pool_stats(engine)) {
            *kept = (*kept).max(stat.peak);
        }
    }

    /// The stream's statistics: the engine's (`engine` from its O(pools)
    /// `stats`) with what the tally adds.
    pub(crate) fn stats(&mut self, engine: &PoolStats) -> MemoryStats {
        self.sample_inactive(engine);
        let mut stats = MemoryStats {
            allocated_bytes: engine.allocated_bytes,
            reserved_bytes: engine.reserved_bytes,
            active_bytes: engine.active_bytes,
            inactive_bytes: self.inactive,
            requested_bytes: engine.requested_bytes,
            allocation_count: engine.allocation_count,
            segment_count: engine.segment_count,
            storage_allocs: engine.storage_allocs,
            storage_frees: engine.storage_frees,
            num_alloc_retries: self.num_alloc_retries,
            num_ooms: self.num_ooms,
            largest_free_block: engine.largest_free_block,
            leaked_bytes: engine.leaked_bytes,
            chunks: engine.chunks,
            driver: Default::default(),
            waits: Default::default(),
            sharing: Default::default(),
        };
        for (stat, &kept) in stats.stats_mut().into_iter().zip(&self.peaks) {
            stat.peak = stat.peak.max(kept);
        }
        stats
    }

    /// Lower the stream's peaks to the engine's current levels (the caller
    /// resets the engine's own).
    pub(crate) fn reset_peaks(&mut self, engine: &PoolStats) {
        for (kept, stat) in self.peaks.iter_mut().zip(pool_stats(engine)) {
            *kept = stat.current;
        }
        self.sample_inactive(engine);
        self.inactive.peak = self.inactive.current;
    }
}
