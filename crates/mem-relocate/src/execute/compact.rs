//! Compaction: emptying sparse *current* pages into room the pools hold.
//!
//! Relocation empties *outdated* pages; a workload whose frees leave holes
//! in current pages keeps those pages too, half empty, for good. The pool
//! engine plans a compaction ([`MemoryManagement::plan_compaction`]) over
//! the same plan → copy → commit path: targets only in held room (it never
//! allocates), the least-occupied movable pages first, all or nothing per
//! page, nothing during a capture. This module decides *when* and runs it:
//!
//! - **Which reasons compact**: those whose room is
//!   [`Held`](crate::TargetRoom::Held) — [`Explicit`](RelocationReason::Explicit)
//!   and [`MemoryPressure`](RelocationReason::MemoryPressure). A reclaim
//!   gives memory back and a pressured device needs pages back, and
//!   neither may raise reserved bytes, which a compaction never does. Out
//!   of page sizes or before a capture, the outdated pages are what matters.
//! - **When it is worth planning** ([`compaction_worthwhile`]): the holes
//!   add up to at least one page of some pool, and they are at least a
//!   tenth of the live bytes on current pages.
//! - **Rounds**: a page that received targets is not emptied in the same
//!   plan, so a run replans while the last plan emptied pages, at most
//!   [`MAX_ROUNDS`] times.

use mem_pools::{CompactionState, CopyQueue, MemoryManagement, RelocationOutcome};
use mem_storage::ComputeStorage;

use crate::error::RelocationError;
use crate::execute::Planned;
use crate::reason::RelocationReason;

/// Most plans one compaction run makes (the engine's own measurements
/// needed at most two).
pub const MAX_ROUNDS: usize = 4;

/// Whether memory in `state` has holes worth a compaction plan: at least
/// one page's worth, and at least a tenth of the live bytes on current
/// pages. A plan is O(live slices on candidate pages), so the second rule
/// keeps dense memory from being replanned for a few stray holes.
pub fn compaction_worthwhile(state: &CompactionState) -> bool {
    state.compactable_pages >= 1
        && state.current_free_bytes.saturating_mul(10) >= state.current_live_bytes
}

/// What one compaction run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Compaction {
    /// Moves and freed pages summed over the run's rounds.
    pub outcome: RelocationOutcome,
    /// Plans made (0 when the memory was not worth planning).
    pub rounds: usize,
    /// Whether the run ended on a plan that emptied nothing: the memory, in
    /// its state after the run, is as compact as a plan can make it.
    pub settled: bool,
}

/// Compact `memory` through `queue` for `reason`, if the reason's room is
/// held and the memory is [worth it](compaction_worthwhile): replan while
/// the last plan emptied pages, at most [`MAX_ROUNDS`] plans.
///
/// A reason that may allocate compacts nothing (`rounds == 0`).
///
/// # Errors
/// As [`Planned::copy`] and [`crate::Copied::commit`]; rounds that
/// committed before the failure stay committed (their pages went back).
pub fn compact_memory<S: ComputeStorage>(
    memory: &mut MemoryManagement<S>,
    reason: RelocationReason,
    queue: &mut dyn CopyQueue<S>,
) -> Result<Compaction, RelocationError> {
    let mut run = Compaction::default();
    if reason.may_allocate() || !compaction_worthwhile(&memory.compaction_state()) {
        run.settled = true;
        return Ok(run);
    }
    while run.rounds < MAX_ROUNDS {
        run.rounds += 1;
        let planned = Planned::compaction(memory, reason);
        if planned.pages() == 0 {
            run.settled = true;
            return Ok(run);
        }
        let o = planned.copy(queue)?.commit()?;
        run.outcome.moved_slices += o.moved_slices;
        run.outcome.moved_bytes += o.moved_bytes;
        run.outcome.pages_freed += o.pages_freed;
        run.outcome.bytes_freed += o.bytes_freed;
        if o.pages_freed == 0 {
            run.settled = true;
            return Ok(run);
        }
    }
    Ok(run)
}
