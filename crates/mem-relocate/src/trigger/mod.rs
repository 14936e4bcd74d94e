//! `RelocationTrigger`: when one stream's memory should relocate.
//!
//! Two rules on top of [`RelocationNeed::from_state`]:
//! - **pressure** is measured against the device's capacity, when known
//!   (see [`crate::need`] for the "one page to spare" rule);
//! - **the stalled-shape memo**: after a relocation that moved nothing, the
//!   pools' [`RelocationShape`] is remembered and no relocation is wanted
//!   again until the shape changes. Without it, a stream whose outdated
//!   pages cannot move (pinned, raw addresses out, no room held) would plan
//!   — reserve and free targets, and wait on the device — before every
//!   reservation, for nothing.
//!
//! The memo compares shapes only: room freed inside current pages does not
//! change the shape, so a stalled trigger stays quiet until pages come or
//! go, a pin or raw address is released, or live bytes on outdated pages
//! change. An explicit relocation does not consult the trigger.
//!
//! **Compaction under pressure** ([`RelocationTrigger::compaction_need`]):
//! with nothing outdated to move, a pressured device may still win pages
//! back by compacting sparse current pages ([`crate::compact`]). Its memo
//! is the same idea on a coarser key: after a run that settled (its last
//! plan emptied nothing), no compaction is wanted under pressure until the
//! number of current pages with live data or of compactable pages changes.
//! Live bytes change on every reservation, so memoizing the exact
//! [`CompactionState`] would replan — and wait on the device — before
//! nearly every reservation of a pressured device whose holes cannot be
//! filled. An explicit reclaim compacts without consulting the memo.

use mem_pools::{CompactionState, RelocationOutcome, RelocationShape, RelocationState};

use crate::execute::compact::{Compaction, compaction_worthwhile};
use crate::trigger::need::RelocationNeed;

pub mod need;

/// When to relocate one stream's memory (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelocationTrigger {
    capacity: Option<u64>,
    stalled: Option<RelocationShape>,
    compaction_settled: Option<CompactionState>,
}

impl RelocationTrigger {
    /// A trigger for a device of `capacity` bytes (`None`: unknown, so
    /// only running out of page sizes asks for a relocation).
    pub fn new(capacity: Option<u64>) -> Self {
        Self {
            capacity,
            stalled: None,
            compaction_settled: None,
        }
    }

    /// The device capacity pressure is measured against.
    pub fn capacity(&self) -> Option<u64> {
        self.capacity
    }

    /// Change the device capacity (a budget changed, a device was resized).
    pub fn set_capacity(&mut self, capacity: Option<u64>) {
        self.capacity = capacity;
    }

    /// The shape a relocation that moved nothing left behind, if any.
    pub fn stalled_shape(&self) -> Option<RelocationShape> {
        self.stalled
    }

    /// The compaction state a settled compaction run left behind, if any.
    pub fn settled_compaction(&self) -> Option<CompactionState> {
        self.compaction_settled
    }

    /// Whether memory whose current pages are in `state` wants a
    /// compaction for pressure: worth planning, not settled on the same
    /// page counts, and a device capacity known. `page_size` is what the
    /// next page costs ([`RelocationState::next_page_size`]).
    pub fn compaction_need(&self, state: &CompactionState, page_size: u64) -> RelocationNeed {
        let settled = self.compaction_settled.is_some_and(|s| {
            s.current_pages_with_live_data == state.current_pages_with_live_data
                && s.compactable_pages == state.compactable_pages
        });
        match self.capacity {
            Some(capacity) if !settled && compaction_worthwhile(state) => {
                RelocationNeed::UnderPressure {
                    capacity,
                    page_size,
                }
            }
            _ => RelocationNeed::Nothing,
        }
    }

    /// Record a compaction run (`None` if it failed) and the state it left:
    /// a settled or failed run is not wanted again under pressure until the
    /// page counts change; a run cut short by its round bound is.
    pub fn record_compaction(&mut self, run: Option<&Compaction>, state: CompactionState) {
        self.compaction_settled = match run {
            Some(run) if !run.settled => None,
            _ => Some(state),
        };
    }

    /// Whether memory in `state` wants a relocation now.
    pub fn need(&self, state: &RelocationState) -> RelocationNeed {
        if self.stalled == Some(state.shape) {
            return RelocationNeed::Nothing;
        }
        RelocationNeed::from_state(state, self.capacity)
    }

    /// Something moved: forget any stalled shape.
    pub fn moved(&mut self) {
        self.stalled = None;
    }

    /// A relocation moved nothing and left the pools in `shape`: want none
    /// again until the shape changes.
    pub fn stalled(&mut self, shape: RelocationShape) {
        self.stalled = Some(shape);
    }

    /// Record an attempt: `outcome` (`None` if it failed) and the shape the
    /// pools were left in.
    pub fn record(&mut self, outcome: Option<&RelocationOutcome>, shape: RelocationShape) {
        match outcome {
            Some(o) if o.moved_slices > 0 || o.pages_freed > 0 => self.moved(),
            _ => self.stalled(shape),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(outdated: usize, pinned: usize, out_of_sizes: bool) -> RelocationState {
        RelocationState {
            has_outdated: outdated > 0,
            next_page_size: 64,
            out_of_page_sizes: out_of_sizes,
            shape: RelocationShape {
                current_pages: 1,
                outdated_pages: outdated,
                outdated_pinned: pinned,
                outdated_live_bytes: if outdated > 0 { 10 } else { 0 },
            },
        }
    }

    #[test]
    fn an_unchanged_shape_is_not_replanned_until_it_changes() {
        let mut trigger = RelocationTrigger::new(Some(1024));
        let s = state(2, 0, true);
        assert_eq!(trigger.need(&s), RelocationNeed::OutOfPageSizes);
        trigger.record(Some(&RelocationOutcome::default()), s.shape);
        assert_eq!(trigger.need(&s), RelocationNeed::Nothing);
        let changed = state(3, 0, true);
        assert_eq!(trigger.need(&changed), RelocationNeed::OutOfPageSizes);
        trigger.moved();
        assert_eq!(trigger.need(&s), RelocationNeed::OutOfPageSizes);
    }

    fn holes(pages: usize, compactable: usize, free: u64, live: u64) -> CompactionState {
        CompactionState {
            current_live_bytes: live,
            current_free_bytes: free,
            current_pages_with_live_data: pages,
            compactable_pages: compactable,
        }
    }

    #[test]
    fn a_settled_compaction_is_not_wanted_again_until_the_page_counts_change() {
        let mut trigger = RelocationTrigger::new(Some(1024));
        let sparse = holes(4, 2, 300, 100);
        let want = RelocationNeed::UnderPressure {
            capacity: 1024,
            page_size: 64,
        };
        assert_eq!(trigger.compaction_need(&sparse, 64), want);
        let settled = Compaction {
            settled: true,
            ..Compaction::default()
        };
        trigger.record_compaction(Some(&settled), sparse);
        // Live bytes moved (a reservation), page counts did not: still quiet.
        assert!(
            trigger
                .compaction_need(&holes(4, 2, 250, 150), 64)
                .is_nothing()
        );
        assert_eq!(trigger.compaction_need(&holes(5, 2, 250, 150), 64), want);
        // A run cut short by its round bound wants another.
        trigger.record_compaction(Some(&Compaction::default()), sparse);
        assert_eq!(trigger.compaction_need(&sparse, 64), want);
    }

    #[test]
    fn dense_memory_or_an_unknown_capacity_wants_no_compaction() {
        let trigger = RelocationTrigger::new(Some(1024));
        assert!(
            trigger
                .compaction_need(&holes(4, 0, 300, 100), 64)
                .is_nothing()
        );
        assert!(
            trigger
                .compaction_need(&holes(40, 1, 90, 1000), 64)
                .is_nothing()
        );
        let blind = RelocationTrigger::new(None);
        assert!(
            blind
                .compaction_need(&holes(4, 2, 300, 100), 64)
                .is_nothing()
        );
    }

    #[test]
    fn nothing_is_wanted_when_every_outdated_page_is_pinned_or_nothing_is_outdated() {
        let trigger = RelocationTrigger::new(Some(1024));
        assert!(trigger.need(&state(0, 0, true)).is_nothing());
        assert!(trigger.need(&state(2, 2, true)).is_nothing());
        assert_eq!(
            trigger.need(&state(2, 1, false)),
            RelocationNeed::UnderPressure {
                capacity: 1024,
                page_size: 64
            }
        );
        assert!(
            RelocationTrigger::new(None)
                .need(&state(2, 0, false))
                .is_nothing()
        );
    }
}
