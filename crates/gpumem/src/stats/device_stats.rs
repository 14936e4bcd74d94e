//! The device's statistics without a device-wide lock on the hot path.
//!
//! Every engine call used to fold its statistics into one device tally
//! behind a mutex, so N threads on N streams queued on that lock at every
//! reservation. Now a stream's statistics are its engine's counters under
//! its own lock, and the device's are summed over the streams when someone
//! reads them. The one figure a sum cannot give is the device's **peak**
//! (the streams need not peak together), so it is kept here in atomics.
//! With one stream the stream's peak is the device's and none of this runs
//! per call: the atomics are only raised with the stream's peaks when the
//! stream's are reset or the device's read. With several:
//!
//! - after each call, a stream publishes its current levels (a store into
//!   its own [`Levels`], only for the levels that changed);
//! - the device total can only rise through some stream rising, so only a
//!   call whose own peak rose above its level at the start of the call
//!   checks the device peak: the other streams' published levels plus this
//!   call's peak, raised with `fetch_max`. Most calls of a steady state
//!   (a reservation that reuses what its own drain just freed) never rise
//!   and read nothing of the other streams.
//!
//! A rising call first bounds the other streams by their `high` (at least
//! every level each published since the last reset, raised before the
//! level is stored) and reads their current levels only when that bound
//! could beat the device's peak: in a steady state the bound holds, and a
//! call reads only lines nobody writes (see [`Levels`]).
//!
//! When two streams rise at once, each stores its level, issues a
//! sequentially consistent fence, then loads the other's, so at least one
//! of them sees the other's rise (without the fence two loads after two
//! stores may both miss: the store-then-load pattern of Dekker's
//! algorithm; the loom model in `device_stats_loom.rs` found that schedule
//! and checks this one). A call that does not rise only stores. Calls from one thread are
//! exact, as before; concurrent ones are exact up to what a call held
//! inside itself and gave back before the other published.

use mem_pools::PoolStats;

use super::MemoryStats;
use crate::sync::{AtomicU64, Ordering, fence};

/// Levels kept device-wide: the six engine statistics, then inactive bytes.
pub(crate) const LEVELS: usize = 7;

/// The current levels of a call's statistics, in [`LEVELS`] order.
pub(crate) fn levels(stats: &MemoryStats) -> [u64; LEVELS] {
    [
        stats.allocated_bytes.current,
        stats.reserved_bytes.current,
        stats.active_bytes.current,
        stats.requested_bytes.current,
        stats.allocation_count.current,
        stats.segment_count.current,
        stats.inactive_bytes.current,
    ]
}

/// The current levels of an engine's counters, in [`LEVELS`] order.
pub(crate) fn pool_levels(call: &PoolStats) -> [u64; LEVELS] {
    [
        call.allocated_bytes.current,
        call.reserved_bytes.current,
        call.active_bytes.current,
        call.requested_bytes.current,
        call.allocation_count.current,
        call.segment_count.current,
        call.inactive_bytes(),
    ]
}

/// The peaks of a stream's statistics, in [`LEVELS`] order.
pub(crate) fn peak_levels(stats: &MemoryStats) -> [u64; LEVELS] {
    [
        stats.allocated_bytes.peak,
        stats.reserved_bytes.peak,
        stats.active_bytes.peak,
        stats.requested_bytes.peak,
        stats.allocation_count.peak,
        stats.segment_count.peak,
        stats.inactive_bytes.peak,
    ]
}

/// The highest levels one call reached (the engine's peaks were reset at
/// its start); inactive bytes are sampled at the end of the call only.
pub(crate) fn call_peaks(call: &PoolStats) -> [u64; LEVELS] {
    [
        call.allocated_bytes.peak,
        call.reserved_bytes.peak,
        call.active_bytes.peak,
        call.requested_bytes.peak,
        call.allocation_count.peak,
        call.segment_count.peak,
        call.inactive_bytes(),
    ]
}

/// A stream's levels as the other streams' peak checks read them: the
/// current ones (stored after each call), and `high`, at least every level
/// published since the last device reset, raised before `now` is stored.
/// A rising call first bounds the others by their `high`; only when that
/// bound could beat the device's peak does it read their `now`. In a
/// steady state `high` is never written, so the other streams' lines stay
/// shared in every core's cache, where reading `now` (written by its owner
/// on every call) took the line across cores on every call: two threads on
/// two streams ran no faster than one.
#[derive(Debug, Default)]
pub(crate) struct Levels {
    now: Line,
    high: Line,
}

/// One array of levels on cache lines of its own (128 bytes: the pair of
/// lines x86 prefetches together), so a store into `now` never evicts a
/// reader's copy of `high`, or a neighbouring stream's.
#[derive(Debug)]
#[repr(align(128))]
struct Line([AtomicU64; LEVELS]);

impl Default for Line {
    fn default() -> Self {
        Self(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl Levels {
    /// Lower `high` to the current levels. Only under the stream's lock
    /// (no call of it in flight, so `now` is its last word).
    pub(crate) fn reset_high(&self) {
        for (high, now) in self.high.0.iter().zip(&self.now.0) {
            high.store(now.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}

/// The device's peaks, raised without a lock.
#[derive(Debug)]
pub(crate) struct DevicePeaks([AtomicU64; LEVELS]);

impl Default for DevicePeaks {
    fn default() -> Self {
        Self(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl DevicePeaks {
    /// A stream (`mine`; the device's other streams are `others`) moved from
    /// `start` to `now`, reaching `peaks` inside the call: publish its
    /// levels, raise the device's peaks.
    pub(crate) fn after_call<'a>(
        &self,
        others: impl Iterator<Item = &'a Levels> + Clone,
        mine: &Levels,
        start: &[u64; LEVELS],
        now: &[u64; LEVELS],
        peaks: &[u64; LEVELS],
    ) {
        // The bound first, so that whoever sees a level of ours sees a
        // bound at least as high (with the fence below; see `Levels`).
        for (high, (&p, &n)) in mine.high.0.iter().zip(peaks.iter().zip(now)) {
            let top = p.max(n);
            if high.load(Ordering::Relaxed) < top {
                high.fetch_max(top, Ordering::Relaxed);
            }
        }
        // Against what was published rather than `start`: a level changed
        // between calls (outside the facade's calls) is published too.
        for (published, &level) in mine.now.0.iter().zip(now) {
            if published.load(Ordering::Relaxed) != level {
                published.store(level, Ordering::Release);
            }
        }
        if (0..LEVELS).all(|i| peaks[i] <= start[i]) {
            return;
        }
        if others.clone().next().is_none() {
            // One stream: its peak is the device's, no one to order with.
            self.raise(peaks);
            return;
        }
        // Of two streams rising at once, at least one sees the other's new
        // level: each stores, then fences, then loads (Dekker's pattern; a
        // sequentially consistent fence, which loom models, unlike
        // sequentially consistent loads and stores). Only rising calls pay
        // for the fence, and the loads take the other streams' lines
        // shared, not exclusive as a read-modify-write would (two threads
        // rising in turn spent a third of their time on those before).
        fence(Ordering::SeqCst);
        for i in (0..LEVELS).filter(|&i| peaks[i] > start[i]) {
            let device = self.0[i].load(Ordering::Relaxed);
            // No other stream has held more than its `high`: when even
            // that cannot beat the device's peak, the levels need no read.
            let bound = (others.clone())
                .map(|l| l.high.0[i].load(Ordering::Acquire))
                .fold(peaks[i], u64::saturating_add);
            if bound <= device {
                continue;
            }
            let held: u64 = (others.clone())
                .map(|l| l.now.0[i].load(Ordering::Acquire))
                .sum();
            let candidate = held.saturating_add(peaks[i]);
            if device < candidate {
                self.0[i].fetch_max(candidate, Ordering::Relaxed);
            }
        }
    }

    /// Raise the device's peaks to at least `peaks` (a stream's, which the
    /// device's cover: its levels are part of the device's sum).
    pub(crate) fn raise(&self, peaks: &[u64; LEVELS]) {
        for (peak, &p) in self.0.iter().zip(peaks) {
            if peak.load(Ordering::Relaxed) < p {
                peak.fetch_max(p, Ordering::Relaxed);
            }
        }
    }

    /// The device's peaks, each at least `current` (the summed levels).
    pub(crate) fn read(&self, current: &[u64; LEVELS]) -> [u64; LEVELS] {
        std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed).max(current[i]))
    }

    /// Lower every peak to `current` (`reset_peak_memory_stats`).
    pub(crate) fn reset(&self, current: &[u64; LEVELS]) {
        for (peak, &level) in self.0.iter().zip(current) {
            peak.store(level, Ordering::Relaxed);
        }
    }
}

/// Sum streams' statistics into the device's: levels and totals add up,
/// the largest free block is the largest of any one stream; the peaks are
/// the caller's (from [`DevicePeaks::read`]).
pub(crate) fn sum_streams(streams: impl IntoIterator<Item = MemoryStats>) -> MemoryStats {
    let mut sum = MemoryStats::default();
    for s in streams {
        for (dev, one) in sum.stats_mut().into_iter().zip(s.stats()) {
            dev.current += one.current;
            dev.allocated += one.allocated;
            dev.freed += one.freed;
        }
        sum.inactive_bytes.current += s.inactive_bytes.current;
        sum.inactive_bytes.allocated += s.inactive_bytes.allocated;
        sum.inactive_bytes.freed += s.inactive_bytes.freed;
        sum.storage_allocs += s.storage_allocs;
        sum.storage_frees += s.storage_frees;
        sum.leaked_bytes += s.leaked_bytes;
        sum.largest_free_block = sum.largest_free_block.max(s.largest_free_block);
        sum.chunks += s.chunks;
    }
    sum
}

/// Set the peaks of `stats` (levels in [`LEVELS`] order).
pub(crate) fn set_peaks(stats: &mut MemoryStats, peaks: &[u64; LEVELS]) {
    for (stat, &peak) in stats.stats_mut().into_iter().zip(peaks) {
        stat.peak = peak;
    }
    stats.inactive_bytes.peak = peaks[LEVELS - 1];
}

#[cfg(test)]
#[path = "device_stats_tests.rs"]
pub(crate) mod tests;
