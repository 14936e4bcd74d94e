//! Handles on a device budget: figures and reservations, free of the resource
//! type, and the state they share (the ledger and its charge / refund rules).
//!
//! A [`GlobalDeviceBudget`](crate::GlobalDeviceBudget) is generic over the
//! resource below it; runtimes and managers only need its ledger. A
//! [`GlobalBudgetHandle`] is that ledger behind an `Arc`, so any number of
//! holders can reserve against one device budget and read its figures.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mem_storage::{Refuser, StorageError};

use crate::error::{BudgetError, BudgetScope, Result};
use crate::ledger::Ledger;

/// The `backend` named in the messages of the refusals this adaptor returns.
/// To tell a budget refusal from a device that is full, match the errors'
/// typed `refused_by` ([`mem_storage::Refuser::DeviceBudget`]), not this name.
pub const GLOBAL_BUDGET_BACKEND: &str = "global-budget";

/// The state every handle on one device budget shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) ledger: Ledger,
    pub(crate) free_failures: AtomicU64,
    pub(crate) free_failure_bytes: AtomicU64,
}

impl Shared {
    /// Claim `bytes`, then run `make` (the allocation below): confirm the
    /// claim when it succeeds, roll it back when it fails, so a failed
    /// allocation costs nothing. Larger than the whole budget is `TooBig`
    /// (no reclaim can ever make room, so never retried); over what is
    /// left is a retryable `OutOfMemory` naming the budget.
    pub(crate) fn charge<T>(
        &self,
        bytes: u64,
        make: impl FnOnce() -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let ledger = &self.ledger;
        if bytes > ledger.limit() {
            return Err(StorageError::TooBig {
                backend: GLOBAL_BUDGET_BACKEND,
                refused_by: Refuser::DeviceBudget,
                requested: bytes,
                max: ledger.limit(),
            });
        }
        let total = ledger
            .claim_tentative(bytes)
            .map_err(|refusal| StorageError::OutOfMemory {
                backend: GLOBAL_BUDGET_BACKEND,
                refused_by: Refuser::DeviceBudget,
                requested: bytes,
                free: refusal.remaining(),
                total: refusal.limit,
            })?;
        match make() {
            Ok(made) => {
                ledger.confirm(total);
                Ok(made)
            }
            Err(error) => {
                // Roll back: the claim above is ours and is still held.
                let _ = ledger.release(bytes);
                Err(error)
            }
        }
    }

    /// Refund `bytes` after a free below: only when it succeeded (`freed`).
    /// A failed free stays charged and is counted: the memory was not
    /// proven released, and charging it as free could let the device be
    /// oversubscribed. `what` names the memory in the log.
    pub(crate) fn refund(
        &self,
        bytes: u64,
        freed: Result<(), StorageError>,
        what: impl FnOnce() -> String,
    ) -> Result<(), StorageError> {
        match freed {
            Ok(()) => {
                if self.ledger.release(bytes).is_err() {
                    // More than is charged: it did not come through this
                    // budget. Refuse to invent room.
                    tracing::error!(
                        what = what(),
                        bytes,
                        "free of bytes never charged to this budget"
                    );
                }
                Ok(())
            }
            Err(error) => {
                self.free_failures.fetch_add(1, Ordering::Relaxed);
                self.free_failure_bytes.fetch_add(bytes, Ordering::Relaxed);
                tracing::error!(what = what(), bytes, %error, "free failed; bytes stay charged");
                Err(error)
            }
        }
    }
}

/// A cloneable view of a [`GlobalDeviceBudget`](crate::GlobalDeviceBudget)'s ledger, independent of its
/// resource type, so runtimes and managers can reserve against it.
#[derive(Debug, Clone)]
pub struct GlobalBudgetHandle {
    shared: Arc<Shared>,
}

impl GlobalBudgetHandle {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// Claim `bytes` against the device budget without allocating.
    ///
    /// # Errors
    /// [`BudgetError::ResourceExhausted`] with `which: Global` when the bytes
    /// do not fit; nothing is claimed then.
    pub fn reserve(&self, bytes: u64) -> Result<GlobalReservation> {
        self.shared
            .ledger
            .claim(bytes)
            .map_err(|r| BudgetError::exhausted(r, BudgetScope::Global))?;
        Ok(GlobalReservation {
            shared: Arc::clone(&self.shared),
            bytes,
        })
    }

    /// Like [`GlobalBudgetHandle::reserve`], but the peak is not raised
    /// until [`GlobalBudgetHandle::confirm`] (the caller may still roll back).
    pub(crate) fn reserve_tentative(&self, bytes: u64) -> Result<(GlobalReservation, u64)> {
        let total = self
            .shared
            .ledger
            .claim_tentative(bytes)
            .map_err(|r| BudgetError::exhausted(r, BudgetScope::Global))?;
        let token = GlobalReservation {
            shared: Arc::clone(&self.shared),
            bytes,
        };
        Ok((token, total))
    }

    /// A tentative reservation that left the total at `total` stuck.
    pub(crate) fn confirm(&self, total: u64) {
        self.shared.ledger.confirm(total);
    }

    /// The cap in bytes.
    pub fn limit(&self) -> u64 {
        self.shared.ledger.limit()
    }

    /// Bytes charged now.
    pub fn charged(&self) -> u64 {
        self.shared.ledger.claimed()
    }

    /// Bytes that can still be charged.
    pub fn remaining(&self) -> u64 {
        self.shared.ledger.remaining()
    }

    /// Highest charged total since creation or [`GlobalBudgetHandle::reset_peak`].
    pub fn peak(&self) -> u64 {
        self.shared.ledger.peak()
    }

    /// Lower the peak to the charged level now.
    pub fn reset_peak(&self) {
        self.shared.ledger.reset_peak()
    }

    /// Whether the cap is finite (a budget of `u64::MAX` bytes is not).
    pub fn is_finite(&self) -> bool {
        self.shared.ledger.limit() != u64::MAX
    }

    /// Number of frees the resource below refused (their bytes stay charged).
    pub fn free_failures(&self) -> u64 {
        self.shared.free_failures.load(Ordering::Relaxed)
    }

    /// Bytes charged after refused frees, summed over every failure.
    pub fn free_failure_bytes(&self) -> u64 {
        self.shared.free_failure_bytes.load(Ordering::Relaxed)
    }

    /// Whether two handles name the same budget.
    pub fn same_budget(&self, other: &GlobalBudgetHandle) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }
}

/// Bytes claimed on a device budget without an allocation (RAII).
#[derive(Debug)]
#[must_use = "a reservation releases its bytes when dropped"]
pub struct GlobalReservation {
    shared: Arc<Shared>,
    bytes: u64,
}

impl GlobalReservation {
    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for GlobalReservation {
    fn drop(&mut self) {
        // Cannot underflow: these bytes were claimed by this token and only
        // this token releases them.
        if self.shared.ledger.release(self.bytes).is_err() {
            tracing::error!(bytes = self.bytes, "global reservation release underflowed");
        }
    }
}
