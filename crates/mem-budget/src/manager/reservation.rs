//! `GpuMemoryReservation`: bytes claimed for a bounded multi-allocation request.
//!
//! A caller about to make several allocations that must all succeed (a
//! diagnostic transaction, a batch) claims the whole sum first. The claim is
//! atomic, so two such callers cannot both be told "it fits" for room only
//! one of them can have. The token allocates nothing: it holds the local
//! claim (and, for a runtime-backed manager, the device budget claim) until
//! it is dropped.

use std::fmt;
use std::sync::Arc;

use crate::account::Account;
use crate::global_handle::GlobalReservation;

/// Bytes claimed on a manager's budget (and its device budget), released on drop.
#[must_use = "a reservation releases its bytes when dropped"]
pub struct GpuMemoryReservation {
    account: Arc<Account>,
    /// The device-budget claim, released after the local one.
    global: Option<GlobalReservation>,
    bytes: u64,
}

impl fmt::Debug for GpuMemoryReservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuMemoryReservation")
            .field("bytes", &self.bytes)
            .field("global", &self.global.is_some())
            .finish()
    }
}

impl GpuMemoryReservation {
    pub(crate) fn new(
        account: Arc<Account>,
        global: Option<GlobalReservation>,
        bytes: u64,
    ) -> Self {
        Self {
            account,
            global,
            bytes,
        }
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Whether the device budget is also held by this reservation.
    pub fn holds_global(&self) -> bool {
        self.global.is_some()
    }
}

impl Drop for GpuMemoryReservation {
    fn drop(&mut self) {
        // Local first, global second: the reverse of the claim order, so an
        // observer never sees local room that the device budget lacks.
        self.account.release(self.bytes);
        drop(self.global.take());
    }
}
