//! `Account`: a manager's local ledger plus its counters, shared with overlays.
//!
//! An overlay (`GpuMemoryManager::with_runtime_overlay`) is an allocation
//! view, not a second budget: it holds the same `Arc<Account>` as its parent,
//! so one CAS loop arbitrates every claim made through either, and the
//! pair can never oversubscribe the limit however their threads race.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{BudgetError, BudgetScope, Result};
use crate::ledger::Ledger;

/// The local ledger and counters of a manager and its overlays.
#[derive(Debug)]
pub(crate) struct Account {
    pub(crate) ledger: Ledger,
    alloc_count: AtomicU64,
    free_failures: AtomicU64,
    /// Bytes still charged because their free failed and has not yet been
    /// retried successfully.
    free_failure_bytes: AtomicU64,
}

impl Account {
    pub(crate) fn new(limit: u64) -> Self {
        Self {
            ledger: Ledger::new(limit),
            alloc_count: AtomicU64::new(0),
            free_failures: AtomicU64::new(0),
            free_failure_bytes: AtomicU64::new(0),
        }
    }

    /// Claim `bytes` on the local ledger or say why not.
    pub(crate) fn claim(&self, bytes: u64) -> Result<()> {
        self.ledger
            .claim(bytes)
            .map(drop)
            .map_err(|r| BudgetError::exhausted(r, BudgetScope::Local))
    }

    /// Claim `bytes` for an allocation the device may still refuse; call
    /// [`Account::confirm`] with the result once it succeeded.
    pub(crate) fn claim_tentative(&self, bytes: u64) -> Result<u64> {
        self.ledger
            .claim_tentative(bytes)
            .map_err(|r| BudgetError::exhausted(r, BudgetScope::Local))
    }

    /// The allocation behind a tentative claim succeeded.
    pub(crate) fn confirm(&self, total: u64) {
        self.ledger.confirm(total);
    }

    /// Give back bytes this account claimed (an allocation's or a
    /// reservation's own claim, so it cannot underflow).
    pub(crate) fn release(&self, bytes: u64) {
        if let Err(claimed) = self.ledger.release(bytes) {
            tracing::error!(
                bytes,
                claimed,
                "local release underflowed; ledger unchanged"
            );
        }
    }

    /// A device allocation request is being issued.
    pub(crate) fn count_alloc(&self) {
        self.alloc_count.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn alloc_count(&self) -> u64 {
        self.alloc_count.load(Ordering::Relaxed)
    }

    pub(crate) fn reset_alloc_count(&self) {
        self.alloc_count.store(0, Ordering::Relaxed);
    }

    /// A free failed: the bytes stay charged. `first` is false when this was
    /// a retry of a free that had already failed (its bytes are already
    /// counted as retained).
    pub(crate) fn record_free_failure(&self, bytes: u64, first: bool) {
        self.free_failures.fetch_add(1, Ordering::Relaxed);
        if first {
            self.free_failure_bytes.fetch_add(bytes, Ordering::Relaxed);
        }
    }

    /// A retried free succeeded: release its bytes and stop retaining them.
    pub(crate) fn settle_retried_free(&self, bytes: u64) {
        self.free_failure_bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.release(bytes);
    }

    pub(crate) fn free_failures(&self) -> u64 {
        self.free_failures.load(Ordering::Relaxed)
    }

    pub(crate) fn free_failure_bytes(&self) -> u64 {
        self.free_failure_bytes.load(Ordering::Relaxed)
    }

    /// Zero every diagnostic counter; only when nothing is live.
    pub(crate) fn reset_tracking(&self) -> Result<()> {
        let live = self.ledger.claimed();
        if live != 0 {
            return Err(BudgetError::LiveAllocations {
                operation: "reset_tracking",
                live_bytes: live,
            });
        }
        self.ledger.reset_peak();
        self.ledger.reset_counters();
        self.alloc_count.store(0, Ordering::Relaxed);
        self.free_failures.store(0, Ordering::Relaxed);
        Ok(())
    }
}
