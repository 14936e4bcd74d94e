//! Plan → copy → commit, as types that hold the manager they run on.
//!
//! The pool engine owns the moves ([`RelocationPlan`], [`Landed`]); this
//! layer ties each step to the one manager that made it by holding it
//! borrowed, so a plan cannot be copied or committed on another manager,
//! and only a completed copy ([`Copied`]) can be committed:
//!
//! ```text
//! Planned::new(memory, reason) ──copy(queue)──▶ Copied ──commit()──▶ RelocationOutcome
//!        │ drop: targets freed, nothing moved        │ drop: targets freed, nothing moved
//! ```
//!
//! - Dropping a [`Planned`] or a [`Copied`] is a lossless abort: every
//!   allocation stays where it was and its bytes are untouched.
//! - A copy whose enqueue fails moves nothing ([`RelocationCopyError::Copy`]).
//! - A copy whose *wait* fails leaks: sources and targets are never freed
//!   nor reused, since a copy may still write them; the failure is logged
//!   with `tracing::error` ([`RelocationCopyError::Wait`]).
//! - A page moves all-or-nothing: the engine plans only pages whose every
//!   live slice got a target, and commits no page that gained a pin or a
//!   raw address after planning. Pinned and raw-out pages never move.
//!
//! The whole path, by hand (what [`relocate_memory`] does):
//!
//! ```
//! use mem_relocate::{Planned, RelocationReason, StorageCopyQueue};
//! fn move_once(
//!     memory: &mut mem_pools::MemoryManagement<mem_storage::HostStorage>,
//! ) -> Result<(), mem_relocate::RelocationError> {
//!     let planned = Planned::new(memory, RelocationReason::Explicit);
//!     if !planned.is_empty() {
//!         let outcome = planned.copy(&mut StorageCopyQueue)?.commit()?;
//!         println!("moved {} slices, freed {} pages", outcome.moved_slices, outcome.pages_freed);
//!     }
//!     Ok(())
//! }
//! ```
//!
//! Committing a plan whose copies have not run does not compile:
//!
//! ```compile_fail
//! use mem_relocate::{Planned, RelocationReason};
//! fn skip_the_copy(memory: &mut mem_pools::MemoryManagement<mem_storage::HostStorage>) {
//!     let planned = Planned::new(memory, RelocationReason::Explicit);
//!     let _ = planned.commit(); // no such method: only `Copied` commits
//! }
//! ```
//!
//! and neither does planning on one manager while a plan holds it:
//!
//! ```compile_fail
//! use mem_relocate::{Planned, RelocationReason};
//! fn two_at_once(memory: &mut mem_pools::MemoryManagement<mem_storage::HostStorage>) {
//!     let first = Planned::new(memory, RelocationReason::Explicit);
//!     let second = Planned::new(memory, RelocationReason::Explicit);
//!     drop((first, second));
//! }
//! ```

use mem_pools::{
    CopyQueue, Landed, MemoryManagement, RelocationCopyError, RelocationOutcome, RelocationPlan,
};
use mem_storage::ComputeStorage;

use crate::error::RelocationError;
use crate::reason::RelocationReason;

pub mod compact;
pub(crate) mod cuda;
pub(crate) mod modeled;

/// Targets reserved on `memory` for every movable outdated page (or, from
/// [`Planned::compaction`], for every sparse current page that can empty).
#[must_use = "dropping a plan abandons it (losslessly); call copy to move"]
#[derive(Debug)]
pub struct Planned<'m, S: ComputeStorage> {
    memory: &'m mut MemoryManagement<S>,
    plan: RelocationPlan,
    reason: RelocationReason,
}

impl<'m, S: ComputeStorage> Planned<'m, S> {
    /// Plan a relocation of `memory` for `reason`: targets go where
    /// [`RelocationReason::room`] allows (held room only, or new pages).
    pub fn new(memory: &'m mut MemoryManagement<S>, reason: RelocationReason) -> Self {
        let plan = memory.plan_relocation(reason.room());
        Self {
            memory,
            plan,
            reason,
        }
    }

    /// Plan a compaction of `memory` for `reason`: sparse *current* pages
    /// emptied into held room of other pages (never allocates, whatever the
    /// reason; see [`crate::compact`] for which reasons compact).
    pub fn compaction(memory: &'m mut MemoryManagement<S>, reason: RelocationReason) -> Self {
        let plan = memory.plan_compaction();
        Self {
            memory,
            plan,
            reason,
        }
    }

    /// Why this relocation runs.
    pub fn reason(&self) -> RelocationReason {
        self.reason
    }

    /// Slices to move.
    pub fn moves(&self) -> usize {
        self.plan.moves()
    }

    /// Capacity bytes to move.
    pub fn bytes(&self) -> u64 {
        self.plan.bytes()
    }

    /// Pages the plan would empty: outdated ones, or current ones for a
    /// [compaction](Planned::compaction).
    pub fn pages(&self) -> usize {
        self.plan.pages()
    }

    /// Nothing to move (a relocation that would wait on nothing).
    pub fn is_empty(&self) -> bool {
        self.plan.is_empty()
    }

    /// Wait for the device through `queue`, enqueue every copy, and wait
    /// for the copies.
    ///
    /// # Errors
    /// [`RelocationError::Copy`] carrying [`RelocationCopyError::Copy`]:
    /// nothing moved, the targets are freed; carrying
    /// [`RelocationCopyError::Wait`]: completion unknown, sources and targets
    /// leaked (logged at error level).
    pub fn copy(self, queue: &mut dyn CopyQueue<S>) -> Result<Copied<'m, S>, RelocationError> {
        let Self {
            memory,
            plan,
            reason,
        } = self;
        match memory.copy_relocation(plan, queue) {
            Ok(landed) => Ok(Copied {
                memory,
                landed,
                reason,
            }),
            Err(err) => {
                let err = RelocationError::from(err);
                if let RelocationError::Copy(RelocationCopyError::Wait { leaked_bytes, .. }) = err {
                    tracing::error!(%reason, leaked_bytes, "relocation copies may still run: leaking instead of freeing");
                }
                Err(err)
            }
        }
    }
}

/// Copies that all completed, ready to commit on the manager that made them.
#[must_use = "dropping landed copies abandons them (losslessly); call commit"]
#[derive(Debug)]
pub struct Copied<'m, S: ComputeStorage> {
    memory: &'m mut MemoryManagement<S>,
    landed: Landed,
    reason: RelocationReason,
}

impl<S: ComputeStorage> Copied<'_, S> {
    /// Why this relocation runs.
    pub fn reason(&self) -> RelocationReason {
        self.reason
    }

    /// Slices whose copies landed.
    pub fn moves(&self) -> usize {
        self.landed.moves()
    }

    /// Point every moved allocation at its target, then give the emptied
    /// pages (outdated, or current for a compaction) back to the storage.
    ///
    /// # Errors
    /// Only if the engine refuses the landed copies
    /// ([`mem_pools::IoError::ForeignRelocation`] cannot happen through this type, as the
    /// manager is the one that planned).
    pub fn commit(self) -> Result<RelocationOutcome, RelocationError> {
        Ok(self.memory.commit_relocation(self.landed)?)
    }
}

/// Plan, copy and commit one relocation of `memory` for `reason`.
///
/// An empty plan returns an empty outcome without touching `queue`: with
/// nothing to move, a relocation waits on nothing.
///
/// # Errors
/// As [`Planned::copy`] and [`Copied::commit`].
pub fn relocate_memory<S: ComputeStorage>(
    memory: &mut MemoryManagement<S>,
    reason: RelocationReason,
    queue: &mut dyn CopyQueue<S>,
) -> Result<RelocationOutcome, RelocationError> {
    let planned = Planned::new(memory, reason);
    if planned.is_empty() {
        return Ok(RelocationOutcome::default());
    }
    planned.copy(queue)?.commit()
}
