//! `ReserveRetry`: what a refused reservation does next, the one rule every
//! runtime follows.
//!
//! PyTorch's allocator frees its cached blocks and tries once more before it
//! raises; a paged pool can also run out of *page sizes* (every size its
//! growth may use already holds an outdated page), which a relocation fixes
//! by emptying those pages. So a refusal is retried at most twice, once per
//! cause, and anything neither step can fix is returned at once:
//!
//! ```text
//! PageSizesExhausted (first time)        → relocate for PoolsOutOfPageSizes, retry
//! storage refusal that freeing may fix   → free cached memory (DeviceRelocation::free_cached), retry
//! anything else, or a cause already tried → give up
//! ```
//!
//! The runtime keeps its own locks around each step: the facade relocates
//! under its device's `moving` lock but reserves outside it, so streams
//! reserve in parallel.

use mem_pools::IoError;

/// The next step after a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryStep {
    /// Relocate the stream's memory for
    /// [`PoolsOutOfPageSizes`](crate::RelocationReason::PoolsOutOfPageSizes),
    /// then reserve again.
    RelocateForPageSizes,
    /// Give back what every stream caches, then reserve again.
    FreeCachedMemory,
    /// Return the error: nothing left to try.
    GiveUp,
}

/// The retry state of one reservation (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReserveRetry {
    relocated: bool,
    freed: bool,
}

impl ReserveRetry {
    /// A reservation that has tried nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// What to do after the reservation was refused with `err`.
    pub fn next(&mut self, err: &IoError) -> RetryStep {
        match err {
            IoError::PageSizesExhausted { .. } if !self.relocated => {
                self.relocated = true;
                RetryStep::RelocateForPageSizes
            }
            IoError::Storage(cause) if cause.is_retryable() && !self.freed => {
                self.freed = true;
                RetryStep::FreeCachedMemory
            }
            _ => RetryStep::GiveUp,
        }
    }

    /// Whether cached memory was given back during this reservation.
    pub fn freed(&self) -> bool {
        self.freed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mem_storage::StorageError;

    /// A refusal freeing may fix (an injected fault reads as one).
    fn oom() -> IoError {
        IoError::Storage(StorageError::Injected {
            call: 1,
            operation: "alloc",
        })
    }

    #[test]
    fn each_cause_is_retried_once_then_given_up() {
        let mut retry = ReserveRetry::new();
        let sizes = IoError::PageSizesExhausted {
            pool: 0,
            wanted: 1 << 30,
            generations: 8,
        };
        assert_eq!(retry.next(&sizes), RetryStep::RelocateForPageSizes);
        assert_eq!(retry.next(&oom()), RetryStep::FreeCachedMemory);
        assert!(retry.freed());
        assert_eq!(retry.next(&sizes), RetryStep::GiveUp);
        assert_eq!(retry.next(&oom()), RetryStep::GiveUp);
    }

    #[test]
    fn an_error_freeing_cannot_fix_is_given_up_at_once() {
        let mut retry = ReserveRetry::new();
        assert_eq!(
            retry.next(&IoError::InvalidSize {
                size: u64::MAX,
                alignment: 512
            }),
            RetryStep::GiveUp
        );
        assert!(!retry.freed());
    }
}
