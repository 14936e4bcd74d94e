//! The pool engine as a replay backend that relocates between ops.
//!
//! The `gpumem` command's pool backend never relocates (its engine is
//! private to it), so the fragmentation table drives its own engine here,
//! with mem-relocate's plan → copy → commit ([`relocate_memory`]) on a
//! simulated device (copies are range-checked no-ops there: the table is
//! about bytes held, not copy speed). Three policies:
//!
//! - [`Policy::Off`]: never relocate (what the `gpumem` command measures).
//! - [`Policy::Trigger`]: mem-relocate's [`RelocationTrigger`] before every
//!   reservation, as a runtime would run it: relocate when the next page
//!   would leave less than a page of the device free, or when a pool has run
//!   out of page sizes; never again on an unchanged shape after a relocation
//!   that moved nothing.
//! - [`Policy::Eager`]: after every op, whenever an outdated page holds
//!   movable live bytes (and the shape changed since the last fruitless
//!   try), relocate with [`RelocationReason::Explicit`], which only uses
//!   room the pools already hold: relocation itself never raises reserved
//!   bytes, it only lets emptied outdated pages go back. This is the upper
//!   bound of what relocation can give back.
//! - [`Policy::Compact`]: eager relocation, and after every op, when the
//!   holes in current pages reach [`COMPACT_HOLES_PERCENT`] of their live
//!   bytes and a whole page's worth of holes exists, mem-pools' compaction
//!   (`plan_compaction`: empty the sparsest current pages into held room of
//!   the others, then give them back), through the same copy and commit.
//!   A compaction that empties nothing is not retried until the pools'
//!   compaction state changes.

use mem_pools::{
    CompactionState, ManagedMemoryHandle, MemoryAllocationMode, MemoryConfiguration,
    MemoryManagement, StorageCopyQueue,
};
use mem_relocate::{RelocationReason, RelocationTrigger, relocate_memory};
use mem_storage::SimulatedStorage;

use gpumem_cli::replay::AllocBackend;
use gpumem_cli::trace::Mode;
use gpumem_cli::{CliError, Result};

use crate::churn::simulated_manager;

mod policy;

pub use policy::{COMPACT_HOLES_PERCENT, Policy, RelocationTally};

/// `MemoryManagement` on a simulated device, relocating per [`Policy`].
#[derive(Debug)]
pub struct RelocatingBackend {
    manager: MemoryManagement<SimulatedStorage>,
    policy: Policy,
    trigger: RelocationTrigger,
    tally: RelocationTally,
    reclaim_at_end: bool,
    settle_error: Option<String>,
    compact_stalled: Option<CompactionState>,
}

impl RelocatingBackend {
    /// The default pool layout on a simulated device of `capacity` bytes.
    pub fn new(capacity: u64, policy: Policy) -> Self {
        RelocatingBackend {
            manager: simulated_manager(capacity, MemoryConfiguration::SubSlices),
            policy,
            trigger: RelocationTrigger::new(Some(capacity)),
            tally: RelocationTally::default(),
            reclaim_at_end: false,
            settle_error: None,
            compact_stalled: None,
        }
    }

    /// Reclaim (relocate per the policy, then give back empty pages) when
    /// the replay settles, before its final numbers are read.
    pub fn reclaim_at_end(mut self, reclaim: bool) -> Self {
        self.reclaim_at_end = reclaim;
        self
    }

    /// The error of the reclaim at the end, if it failed (`settle` cannot
    /// return one).
    pub fn settle_error(&self) -> Option<&str> {
        self.settle_error.as_deref()
    }

    /// What relocation did so far.
    pub fn tally(&self) -> RelocationTally {
        self.tally
    }

    fn relocate(&mut self, reason: RelocationReason) -> Result<()> {
        let outcome =
            relocate_memory(&mut self.manager, reason, &mut StorageCopyQueue).map_err(|e| {
                CliError::Backend {
                    backend: "sim+relocate",
                    message: format!("{reason} relocation: {e}"),
                }
            })?;
        if outcome.moved_slices > 0 || outcome.pages_freed > 0 {
            self.tally.runs += 1;
            self.tally.moved_slices += outcome.moved_slices as u64;
            self.tally.moved_bytes += outcome.moved_bytes;
            self.tally.pages_freed += outcome.pages_freed as u64;
        }
        let shape = self.manager.relocation_state().shape;
        self.trigger.record(Some(&outcome), shape);
        Ok(())
    }

    fn before_reserve(&mut self) -> Result<()> {
        if self.policy != Policy::Trigger {
            return Ok(());
        }
        let state = self.manager.relocation_state();
        let reserved = || self.manager.memory_usage().bytes_reserved;
        match self.trigger.need(&state).reason(reserved) {
            Some(reason) => self.relocate(reason),
            None => Ok(()),
        }
    }

    fn compact(&mut self) -> Result<()> {
        let state = self.manager.compaction_state();
        let holes = state.current_free_bytes.saturating_mul(100);
        let wanted = state.compactable_pages > 0
            && holes
                > state
                    .current_live_bytes
                    .saturating_mul(COMPACT_HOLES_PERCENT)
            && self.compact_stalled != Some(state);
        if !wanted {
            return Ok(());
        }
        let error = |e: &dyn std::fmt::Display| CliError::Backend {
            backend: "sim+compact",
            message: format!("compaction: {e}"),
        };
        let plan = self.manager.plan_compaction();
        if plan.is_empty() {
            self.compact_stalled = Some(state);
            return Ok(());
        }
        let landed = self
            .manager
            .copy_relocation(plan, &mut StorageCopyQueue)
            .map_err(|e| error(&e))?;
        let outcome = self
            .manager
            .commit_relocation(landed)
            .map_err(|e| error(&e))?;
        if outcome.pages_freed == 0 {
            self.compact_stalled = Some(self.manager.compaction_state());
        } else {
            self.compact_stalled = None;
            self.tally.runs += 1;
            self.tally.moved_slices += outcome.moved_slices as u64;
            self.tally.moved_bytes += outcome.moved_bytes;
            self.tally.pages_freed += outcome.pages_freed as u64;
        }
        Ok(())
    }

    fn after_op(&mut self) -> Result<()> {
        if !matches!(self.policy, Policy::Eager | Policy::Compact) {
            return Ok(());
        }
        self.manager.drain_drops();
        let state = self.manager.relocation_state();
        let shape = state.shape;
        let movable = shape.outdated_pages > shape.outdated_pinned && shape.outdated_live_bytes > 0;
        if movable && self.trigger.stalled_shape() != Some(shape) {
            self.relocate(RelocationReason::Explicit)?;
        }
        if self.policy == Policy::Compact {
            self.compact()?;
        }
        Ok(())
    }
}

impl AllocBackend for RelocatingBackend {
    type Token = ManagedMemoryHandle;

    fn name(&self) -> &'static str {
        match self.policy {
            Policy::Off => "sim",
            Policy::Trigger => "sim+trigger",
            Policy::Eager => "sim+eager",
            Policy::Compact => "sim+compact",
        }
    }

    fn reserve(&mut self, size: u64, _stream: u64) -> Result<ManagedMemoryHandle> {
        self.before_reserve()?;
        let handle = self.manager.reserve(size).map_err(|e| CliError::Backend {
            backend: "sim+relocate",
            message: format!("reserve {size} bytes: {e}"),
        })?;
        self.after_op()?;
        Ok(handle)
    }

    fn free(&mut self, token: ManagedMemoryHandle) -> Result<()> {
        drop(token);
        self.after_op()
    }

    fn mode(&mut self, mode: Mode) {
        self.manager.mode(match mode {
            Mode::Persistent => MemoryAllocationMode::Persistent,
            Mode::Auto => MemoryAllocationMode::Auto,
        });
    }

    fn cleanup(&mut self) {
        self.manager.cleanup(true);
    }

    fn live_bytes(&self) -> u64 {
        self.manager.memory_usage().bytes_in_use
    }

    fn reserved_bytes(&self) -> u64 {
        self.manager.memory_usage().bytes_reserved
    }

    /// The engine's own high-water mark: a page taken and another given
    /// back within one call (a pool growing its page size) shows only here.
    fn peak_reserved_bytes(&self) -> Option<u64> {
        Some(self.manager.stats().reserved_bytes.peak)
    }

    fn storage_allocs(&self) -> u64 {
        self.manager.stats().storage_allocs
    }

    fn pool_lines(&self) -> Vec<gpumem_cli::report::PoolLine> {
        gpumem_cli::replay::pool_lines(&self.manager.memory_report())
    }

    fn settle(&mut self) {
        self.manager.drain_drops();
        if !self.reclaim_at_end {
            return;
        }
        if self.policy != Policy::Off
            && let Err(err) = self.relocate(RelocationReason::Explicit)
        {
            self.settle_error = Some(err.to_string());
        }
        self.manager.cleanup(true);
    }
}
