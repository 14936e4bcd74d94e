//! What `--relocate` did, counted from the facade's relocation calls.
//!
//! `gpumem::relocate::RelocationSummary` says what one call moved and gave back
//! (compactions included: the facade reports them as moves); this tally
//! sums the calls of a replay and counts those that did something and
//! those that failed.

use crate::report::RelocationSummary;

/// The running sum of a replay's relocation calls.
#[derive(Debug, Clone, Default)]
pub(crate) struct RelocationTally {
    summary: RelocationSummary,
}

impl RelocationTally {
    /// Counts one call's outcome.
    pub(crate) fn record(
        &mut self,
        outcome: gpumem::error::Result<gpumem::relocate::RelocationSummary>,
    ) {
        let s = &mut self.summary;
        match outcome {
            Ok(done) => {
                if done.moved_slices > 0 || done.pages_freed > 0 {
                    s.relocations += 1;
                }
                s.moved_slices += done.moved_slices as u64;
                s.moved_bytes += done.moved_bytes;
                s.pages_freed += done.pages_freed;
                s.bytes_freed += done.bytes_freed;
            }
            Err(err) => {
                s.failed += 1;
                s.last_error = Some(err.to_string());
            }
        }
    }

    /// The sums, for the report.
    pub(crate) fn summary(&self) -> RelocationSummary {
        self.summary.clone()
    }
}
