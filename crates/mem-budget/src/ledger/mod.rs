//! The atomic ledger: an exact count of claimed bytes under a hard limit.
//!
//! Every budget in this crate — a manager's local budget, the device-wide
//! [`GlobalDeviceBudget`](crate::GlobalDeviceBudget) — is one of these. A
//! claim is a compare-and-swap loop that adds the request only if the sum
//! stays within the limit, so no interleaving of racing threads can ever
//! push the claimed total past the limit (a load-then-add could). A release
//! is also a CAS loop so that an underflow is rejected without changing the
//! count. The peak is kept with `fetch_max`, which is monotone and cannot
//! lose a higher value to a racing lower one.
//!
//! Orderings: the claimed counter is the only thing the ledger synchronises,
//! and nothing else is published through it, so `Relaxed` would suffice for
//! correctness of the sum; `AcqRel` on successful claims and releases makes a
//! release on one thread happen-before the claim it made room for on
//! another, which is what a user reading "the memory is free now" expects.

use sync::{AtomicU64, Ordering};

#[cfg(all(test, loom))]
mod loom_models;
mod sync;

/// Why a claim was refused: the numbers at the moment of refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// Bytes asked for.
    pub requested: u64,
    /// Bytes claimed when the request was refused.
    pub claimed: u64,
    /// The ledger's limit.
    pub limit: u64,
}

impl Refusal {
    /// Bytes that could still be claimed when the request was refused.
    pub fn remaining(&self) -> u64 {
        self.limit.saturating_sub(self.claimed)
    }
}

/// An exact, lock-free count of claimed bytes that never exceeds its limit.
#[derive(Debug)]
pub struct Ledger {
    limit: u64,
    claimed: AtomicU64,
    peak: AtomicU64,
    refusals: AtomicU64,
}

impl Ledger {
    /// An empty ledger that refuses to hold more than `limit` bytes.
    pub fn new(limit: u64) -> Self {
        Self {
            limit,
            claimed: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            refusals: AtomicU64::new(0),
        }
    }

    /// The hard limit in bytes.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes claimed now.
    pub fn claimed(&self) -> u64 {
        self.claimed.load(Ordering::Acquire)
    }

    /// Bytes that can still be claimed now.
    pub fn remaining(&self) -> u64 {
        self.limit.saturating_sub(self.claimed())
    }

    /// Highest claimed total since creation or the last [`Ledger::reset_peak`].
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Acquire)
    }

    /// Number of refused claims.
    pub fn refusals(&self) -> u64 {
        self.refusals.load(Ordering::Relaxed)
    }

    /// Claim `bytes` if the total stays within the limit; returns the new total.
    ///
    /// A zero-byte claim always succeeds and changes nothing.
    ///
    /// Successful claims are not counted here: on the hot path every
    /// read-modify-write is a locked instruction that costs as much as the
    /// claim itself. Refusals (the cold path) are counted; callers that need
    /// a success count keep it where it is cheap (the manager's `alloc_count`).
    pub fn claim(&self, bytes: u64) -> Result<u64, Refusal> {
        let total = self.claim_tentative(bytes)?;
        self.confirm(total);
        Ok(total)
    }

    /// Claim `bytes` exactly as [`Ledger::claim`] does, but leave the peak
    /// alone until [`Ledger::confirm`]: for a claim that
    /// is rolled back if the device then refuses, which must not show up as
    /// a high-water mark of memory that was never held. (A racing claim
    /// that sticks while this one is still on the ledger records the total
    /// it saw, which includes these bytes: the peak is always a level the
    /// ledger really held, in flight claims included.)
    pub fn claim_tentative(&self, bytes: u64) -> Result<u64, Refusal> {
        let mut current = self.claimed.load(Ordering::Relaxed);
        loop {
            let next = match current.checked_add(bytes) {
                Some(next) if next <= self.limit => next,
                _ => {
                    self.refusals.fetch_add(1, Ordering::Relaxed);
                    return Err(Refusal {
                        requested: bytes,
                        claimed: current,
                        limit: self.limit,
                    });
                }
            };
            match self.claimed.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(next),
                Err(seen) => current = seen,
            }
        }
    }

    /// Record a tentative claim that stuck, whose CAS left the total at
    /// `total`, in the peak.
    pub fn confirm(&self, total: u64) {
        // Most claims do not set a new peak: a plain load skips the
        // read-modify-write then. Without a racing reset the peak only
        // grows, so a value ≥ `total` covers this claim; a racing
        // `reset_peak` re-reads the claimed total after its store, so it
        // cannot leave the peak below it.
        if self.peak.load(Ordering::Acquire) < total {
            self.peak.fetch_max(total, Ordering::AcqRel);
        }
    }

    /// Give back `bytes`; returns the new total. More than is claimed is
    /// refused with the claimed total, and nothing changes.
    pub fn release(&self, bytes: u64) -> Result<u64, u64> {
        let mut current = self.claimed.load(Ordering::Relaxed);
        loop {
            let next = current.checked_sub(bytes).ok_or(current)?;
            match self.claimed.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(next),
                Err(seen) => current = seen,
            }
        }
    }

    /// Whether `bytes` more would fit now (a snapshot: a racing claim may
    /// take the room before the caller uses it — only [`Ledger::claim`] is exact).
    pub fn would_fit(&self, bytes: u64) -> Result<(), Refusal> {
        let claimed = self.claimed();
        match claimed.checked_add(bytes) {
            Some(total) if total <= self.limit => Ok(()),
            _ => Err(Refusal {
                requested: bytes,
                claimed,
                limit: self.limit,
            }),
        }
    }

    /// Lower the peak to the claimed total now, so a measurement window
    /// starts from the live level rather than zero.
    ///
    /// A claim racing with the reset is never lost. The claimed total is read
    /// with read-modify-writes (`fetch_add(0)`), which always see the latest
    /// value — a plain load may see an older one, and loom found exactly that
    /// schedule: the reset stored a stale level over a racing claim's peak.
    /// After the store, a second read raises the peak to every claim ordered
    /// before it; a claim ordered after it synchronises with that read, so its
    /// own `fetch_max` lands after the store.
    pub fn reset_peak(&self) {
        let now = self.claimed.fetch_add(0, Ordering::AcqRel);
        self.peak.store(now, Ordering::Release);
        let again = self.claimed.fetch_add(0, Ordering::AcqRel);
        self.peak.fetch_max(again, Ordering::AcqRel);
    }

    /// Zero the refusal counter (the claimed total is untouched).
    pub fn reset_counters(&self) {
        self.refusals.store(0, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_claim_past_the_limit_is_refused_with_the_numbers() {
        let ledger = Ledger::new(100);
        assert_eq!(ledger.claim(60), Ok(60));
        let refusal = ledger.claim(41).unwrap_err();
        assert_eq!(
            refusal,
            Refusal {
                requested: 41,
                claimed: 60,
                limit: 100
            }
        );
        assert_eq!(refusal.remaining(), 40);
        assert_eq!(ledger.claimed(), 60);
        assert_eq!(ledger.refusals(), 1);
    }

    #[test]
    fn a_claim_that_would_overflow_u64_is_refused_not_wrapped() {
        let ledger = Ledger::new(u64::MAX);
        ledger.claim(u64::MAX - 1).unwrap();
        assert!(ledger.claim(2).is_err());
        assert_eq!(ledger.claimed(), u64::MAX - 1);
    }

    #[test]
    fn an_underflowing_release_changes_nothing() {
        let ledger = Ledger::new(100);
        ledger.claim(10).unwrap();
        assert_eq!(ledger.release(11), Err(10));
        assert_eq!(ledger.claimed(), 10);
        assert_eq!(ledger.release(10), Ok(0));
    }

    #[test]
    fn reset_peak_lowers_to_the_live_level_not_zero() {
        let ledger = Ledger::new(100);
        ledger.claim(70).unwrap();
        ledger.release(50).unwrap();
        assert_eq!(ledger.peak(), 70);
        ledger.reset_peak();
        assert_eq!(ledger.peak(), 20);
    }
}
