//! `PoolLedger`: the device's default memory pool as `cuMemAllocAsync`
//! sees it, for the cost model.
//!
//! Why a ledger and not a per-call price: a stream-ordered pool keeps what
//! `cuMemFreeAsync` gives back and serves the next `cuMemAllocAsync` from
//! it, sub-allocating small requests out of one physical growth. It
//! returns memory to the device only at a synchronize (stream, event or
//! context), and then only what exceeds its release threshold, 0 by
//! default (CUDA's `cudaMemPoolAttrReleaseThreshold`; the CUDA stand-in's
//! pool does the same, `crates/cuda-standin/src/pool.rs`). So a request
//! pays for physical memory only when the pool's reservation must grow,
//! and a synchronize pays for what it trims. Pricing every request as a
//! growth of its own size charged 38 requests of 8.6 KiB (burn-lm-train's
//! persistent pages) 38 growths of 2 MiB, where the pool grows once.
//!
//! Modeled: the bytes requested and not yet freed (`used`) and the
//! reservation (`reserved`, whole 2 MiB granules: the pool maps physical
//! memory as the VMM API does). A request that takes `used` past
//! `reserved` grows it to `used` rounded up; a synchronize trims it to
//! `used` rounded up. Not modeled: fragmentation inside the pool (a
//! request that fits the free bytes but no free extent would grow it
//! too), a threshold other than 0, and `cuMemPoolTrimTo`.
//!
//! Lock-free like the meter: `used` is one atomic, and the reservation
//! only moves by `fetch_max` (growth) and `fetch_min` (trim), so
//! concurrent requests add up to exactly the growth they cause.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::driver_cost::table::COST_GRANULE;

/// The default pool's bytes in use and reserved (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct PoolLedger {
    used: AtomicU64,
    reserved: AtomicU64,
}

impl PoolLedger {
    /// A request of `bytes` served by the pool: the bytes the pool's
    /// reservation grows by for it (0 when what it holds free covers it;
    /// else a multiple of 2 MiB).
    pub(crate) fn take(&self, bytes: u64) -> u64 {
        let used = self.used.fetch_add(bytes, Relaxed).saturating_add(bytes);
        let wanted = granules(used);
        let before = self.reserved.fetch_max(wanted, Relaxed);
        wanted.saturating_sub(before)
    }

    /// `bytes` given back to the pool (kept reserved until a synchronize).
    pub(crate) fn give_back(&self, bytes: u64) {
        // Saturating: a free the ledger never saw a request for (a meter
        // installed mid-run) must not wrap.
        let _ = self
            .used
            .fetch_update(Relaxed, Relaxed, |u| Some(u.saturating_sub(bytes)));
    }

    /// A synchronize: the reservation trimmed to what is in use (release
    /// threshold 0); the bytes trimmed.
    pub(crate) fn trim(&self) -> u64 {
        let keep = granules(self.used.load(Relaxed));
        let before = self.reserved.fetch_min(keep, Relaxed);
        before.saturating_sub(keep)
    }

    /// The pool's reservation now, in bytes.
    pub(crate) fn reserved(&self) -> u64 {
        self.reserved.load(Relaxed)
    }
}

/// `bytes` rounded up to whole 2 MiB granules (saturating).
fn granules(bytes: u64) -> u64 {
    bytes.div_ceil(COST_GRANULE).saturating_mul(COST_GRANULE)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;

    #[test]
    fn small_requests_share_one_growth() {
        let pool = PoolLedger::default();
        assert_eq!(pool.take(9 * KIB), 2 * MIB);
        for _ in 0..37 {
            assert_eq!(pool.take(9 * KIB), 0);
        }
        assert_eq!(pool.reserved(), 2 * MIB);
    }

    #[test]
    fn freed_bytes_serve_the_next_request_until_a_synchronize() {
        let pool = PoolLedger::default();
        assert_eq!(pool.take(20 * MIB), 20 * MIB);
        pool.give_back(20 * MIB);
        assert_eq!(pool.take(20 * MIB), 0, "kept by the pool");
        pool.give_back(20 * MIB);
        assert_eq!(pool.trim(), 20 * MIB, "threshold 0: all of it goes");
        assert_eq!(pool.take(20 * MIB), 20 * MIB, "made again");
    }

    #[test]
    fn a_trim_keeps_what_is_in_use_and_growth_is_only_the_shortfall() {
        let pool = PoolLedger::default();
        assert_eq!(pool.take(3 * MIB), 4 * MIB);
        assert_eq!(pool.take(3 * MIB), 2 * MIB, "6 MiB in use, 4 held");
        pool.give_back(3 * MIB);
        assert_eq!(pool.trim(), 2 * MIB, "3 MiB in use keeps 4");
        assert_eq!(pool.trim(), 0);
        pool.give_back(u64::MAX);
        assert_eq!(pool.trim(), 4 * MIB, "a free past zero saturates");
    }
}
