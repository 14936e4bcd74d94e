//! What `--relocate` did, counted from the facade's relocation calls.
//!
//! `gpumem::relocate::RelocationSummary` says what one call moved and gave back
//! (compactions included: the facade reports them as moves); the report's
//! [`Relocations`] sums the calls of a replay and counts those that did
//! something and those that failed.

use gpumem::relocate::RelocationSummary;

use crate::report::Relocations;

impl Relocations {
    /// Counts one relocation call's outcome.
    ///
    /// ```
    /// use gpumem::relocate::RelocationSummary;
    /// use gpumem_replay::report::Relocations;
    ///
    /// let mut sum = Relocations::default();
    /// sum.record(Ok(RelocationSummary { moved_slices: 2, moved_bytes: 512, ..Default::default() }));
    /// sum.record(Ok(RelocationSummary::default()));
    /// assert_eq!((sum.relocations, sum.summed.moved_bytes, sum.failed), (1, 512, 0));
    /// ```
    pub fn record(&mut self, outcome: gpumem::error::Result<RelocationSummary>) {
        match outcome {
            Ok(done) => {
                if done.moved_slices > 0 || done.pages_freed > 0 {
                    self.relocations += 1;
                }
                let sum = &mut self.summed;
                sum.moved_slices += done.moved_slices;
                sum.moved_bytes += done.moved_bytes;
                sum.pages_freed += done.pages_freed;
                sum.bytes_freed += done.bytes_freed;
            }
            Err(err) => {
                self.failed += 1;
                self.last_error = Some(err.to_string());
            }
        }
    }
}
