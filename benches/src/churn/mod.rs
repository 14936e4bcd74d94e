//! Reserve+drop pairs and steady-state churn over a live set, one port for
//! every peer so the criterion targets and the quick table drive the same
//! code.
//!
//! Two measurements, both per operation:
//! - **pair**: reserve `size` bytes and drop them at once, with the live set
//!   held around it (the latency a runtime sees for a short-lived buffer);
//! - **churn**: drop one live slice chosen by the plan and reserve a new
//!   one of the plan's size in its place, so the live count stays constant
//!   and the free lists keep changing shape (what a long run looks like).
//!
//! Before any measurement [`prepare`] fills the live set and runs one churn
//! step per live slice, so free lists are aged, not pristine.

mod offset;
mod pools;
pub mod system;

pub use offset::{OffsetPeer, UNIT, offset_allocator, units};
pub use pools::{PoolsPeer, simulated_manager};

/// Page limits for an engine on a device of `capacity` bytes: the facade's
/// default largest page, `min(1 GiB, capacity)`, at the device's alignment.
pub fn engine_properties(capacity: u64, alignment: u64) -> mem_pools::MemoryDeviceProperties {
    mem_pools::MemoryDeviceProperties {
        max_page_size: crate::GIB.min(capacity).max(alignment.max(1)),
        alignment,
    }
}
pub use system::{SystemPeer, system_alloc};

use crate::Result;
use crate::sizes::ChurnPlan;

/// An allocator driven by the churn measurements.
pub trait ChurnPeer {
    /// Name in tables and benchmark ids.
    fn name(&self) -> &'static str;

    /// Allocates slot `i` with `sizes[i]` for every `i` (slots start empty).
    fn fill(&mut self, sizes: &[u64]) -> Result<()>;

    /// Frees what `slot` holds and allocates `size` bytes into it.
    fn replace(&mut self, slot: usize, size: u64) -> Result<()>;

    /// Allocates `size` bytes and frees them at once.
    fn pair(&mut self, size: u64) -> Result<()>;

    /// Slices live now.
    fn live(&self) -> usize;
}

/// Fills `peer` with `plan`'s live set and ages it with the first
/// `plan.live()` steps (or all of them, if fewer). Returns the index of
/// the first step left for measuring.
pub fn prepare<P: ChurnPeer>(peer: &mut P, plan: &ChurnPlan) -> Result<usize> {
    peer.fill(&plan.initial)?;
    let aging = plan.live().min(plan.steps.len());
    for &(slot, size) in &plan.steps[..aging] {
        peer.replace(slot as usize, size)?;
    }
    Ok(aging)
}

/// A cursor over the measured steps of a plan, wrapping around.
#[derive(Debug, Clone)]
pub struct Steps<'p> {
    steps: &'p [(u32, u64)],
    next: usize,
}

impl<'p> Steps<'p> {
    /// The steps of `plan` from `first` on (all of them if `first` is past
    /// the end).
    pub fn new(plan: &'p ChurnPlan, first: usize) -> Self {
        let steps = plan.steps.get(first..).filter(|s| !s.is_empty());
        Steps {
            steps: steps.unwrap_or(&plan.steps),
            next: 0,
        }
    }

    /// The next `(slot, size)` step (`None` only for an empty plan).
    pub fn next_step(&mut self) -> Option<(usize, u64)> {
        let &(slot, size) = self.steps.get(self.next)?;
        self.next = (self.next + 1) % self.steps.len();
        Some((slot as usize, size))
    }
}

/// Runs `count` churn steps of `steps` on `peer`.
pub fn churn<P: ChurnPeer>(peer: &mut P, steps: &mut Steps<'_>, count: u64) -> Result<()> {
    for _ in 0..count {
        if let Some((slot, size)) = steps.next_step() {
            peer.replace(slot, size)?;
        }
    }
    Ok(())
}

/// Runs `count` reserve+drop pairs on `peer`, sizes taken from `steps`.
pub fn pairs<P: ChurnPeer>(peer: &mut P, steps: &mut Steps<'_>, count: u64) -> Result<()> {
    for _ in 0..count {
        if let Some((_, size)) = steps.next_step() {
            peer.pair(size)?;
        }
    }
    Ok(())
}

/// The three peers, built for a plan of `live` slices.
pub fn all_peers(live: usize) -> (PoolsPeer, OffsetPeer, SystemPeer) {
    (
        PoolsPeer::new(live),
        OffsetPeer::new(live),
        SystemPeer::new(live),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizes::SizeMix;

    fn exercise<P: ChurnPeer>(mut peer: P) {
        let plan = ChurnPlan::new(500, 2000, SizeMix::DEPTH, 11);
        let first = prepare(&mut peer, &plan).unwrap();
        assert_eq!(first, 500);
        assert_eq!(peer.live(), 500);
        let mut steps = Steps::new(&plan, first);
        churn(&mut peer, &mut steps, 3000).unwrap();
        pairs(&mut peer, &mut steps, 3000).unwrap();
        assert_eq!(peer.live(), 500, "{} lost or leaked slices", peer.name());
    }

    #[test]
    fn every_peer_keeps_its_live_count_through_churn_and_pairs() {
        let (pools, offset, system) = all_peers(500);
        exercise(pools);
        exercise(offset);
        exercise(system);
    }

    #[test]
    fn the_step_cursor_wraps_to_the_first_measured_step() {
        let plan = ChurnPlan::new(2, 4, SizeMix::Fixed(8), 1);
        let mut steps = Steps::new(&plan, 2);
        let a = steps.next_step();
        let _ = steps.next_step();
        assert_eq!(steps.next_step(), a);
    }
}
