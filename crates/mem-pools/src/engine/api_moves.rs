//! `MemoryManagement`'s public API for what moves or pins memory: the
//! capture window, relocation (plan → copy → commit, compaction), sleep
//! and wake, and re-claiming a graph's extent. Bodies live beside their
//! noun (`capture/`, `relocation/`, `engine/sleep.rs`).

use mem_storage::{ComputeStorage, StorageHandle};

use crate::capture::record::{CaptureRecord, CaptureState};
use crate::engine::state::MemoryManagement;
use crate::error::{IoError, RelocationCopyError};
use crate::handles::handle_cell::ManagedMemoryHandle;
use crate::pools::arena::sleep::{SleepContents, SleepReport};
use crate::relocation::{
    CompactionState, CopyQueue, Landed, RelocationOutcome, RelocationPlan, RelocationState,
    TargetRoom,
};

impl<S: ComputeStorage> MemoryManagement<S> {
    /// Begin a graph capture (see [`CaptureState`]); inside one, only the
    /// mode stays forced.
    pub fn capture_begin(&mut self) {
        if self.capture.is_none() {
            self.drain();
            self.capture = Some(CaptureRecord::new());
        }
    }

    /// End priming: drop the clones warmup retained (no-op when not priming).
    pub fn capture_priming_end(&mut self) {
        self.end_priming();
    }

    /// End the capture and return a pin handle (a holder of its own) to
    /// every extent the window touched. Empty if no capture was active.
    pub fn capture_end(&mut self) -> Vec<ManagedMemoryHandle> {
        self.pin_touched()
    }

    /// End the capture, pinning nothing (for a graph thrown away).
    pub fn capture_abort(&mut self) {
        if let Some(record) = self.capture.take() {
            drop(record);
            self.drain();
        }
    }

    /// Plain data about the capture window.
    pub fn capture_state(&self) -> CaptureState {
        self.capture
            .as_ref()
            .map_or_else(CaptureState::default, CaptureRecord::state)
    }

    /// Whether any pool holds outdated pages.
    pub fn has_outdated(&self) -> bool {
        self.core.pools.iter().any(|p| !p.outdated.is_empty())
    }

    /// Plain data for relocation triggers (O(pools + outdated pages)).
    pub fn relocation_state(&self) -> RelocationState {
        self.measure_relocation()
    }

    /// Reserve a target for every live slice of each movable outdated page,
    /// cheapest page first (all or nothing per page). Empty during a capture.
    pub fn plan_relocation(&mut self, room: TargetRoom) -> RelocationPlan {
        self.outdated_plan(room)
    }

    /// Plan to empty sparse current pages of sliced pools into held room
    /// (never a new page). Empty during a capture.
    pub fn plan_compaction(&mut self) -> RelocationPlan {
        self.compaction_plan()
    }

    /// Plain data for a compaction trigger (O(pools + outdated pages)).
    pub fn compaction_state(&self) -> CompactionState {
        self.measure_compaction()
    }

    /// Copy every planned move through `queue`; only completed copies land.
    /// A failed wait quarantines sources and targets ([`RelocationCopyError`]).
    pub fn copy_relocation(
        &mut self,
        plan: RelocationPlan,
        queue: &mut dyn CopyQueue<S>,
    ) -> Result<Landed, RelocationCopyError> {
        self.copy_moves(plan, queue)
    }

    /// Hand every landed allocation to its target, free emptied pages and
    /// flush; [`IoError::ForeignRelocation`] for another manager's copies.
    pub fn commit_relocation(&mut self, landed: Landed) -> Result<RelocationOutcome, IoError> {
        self.commit_moves(landed)
    }

    /// Release the physical memory of every arena (the memory, not the addresses: `engine/sleep.rs` says how),
    /// keeping every address; with [`SleepContents::Preserve`] what live
    /// slices hold is copied to host memory first. The storage's queued work
    /// is waited for before anything is unmapped.
    ///
    /// # Errors
    /// [`IoError::Asleep`] when already asleep; [`IoError::Storage`]
    /// `Unsupported` while a capture window is open (sleeping would unmap
    /// what the recording uses). A storage refusal (a read, an unmap) stops
    /// it: what was released stays released, the memory counts as asleep,
    /// and `wake` maps it back.
    pub fn sleep(&mut self, contents: SleepContents) -> Result<SleepReport, IoError> {
        self.sleep_arenas(contents)
    }

    /// Map fresh chunks under every slot live arena slices touch and copy
    /// back what `sleep` preserved; the memory is awake again. Returns the
    /// bytes mapped. No-op (0) when not asleep.
    ///
    /// # Errors
    /// A storage refusal (out of memory: another process holds the memory
    /// now) stops it: what was mapped stays mapped, the memory stays asleep,
    /// and calling `wake` again maps the rest.
    pub fn wake(&mut self) -> Result<u64, IoError> {
        self.wake_arenas()
    }

    /// Whether the arenas are asleep (between `sleep` and `wake`).
    pub fn is_asleep(&self) -> bool {
        self.core.arenas.asleep.is_some()
    }

    /// Re-claim exactly the extent `view` names — `view.size()` bytes at
    /// `view.offset()` of page `view.id`, as [`Self::get_storage`] handed
    /// it out — if it is free now, and return a *pin handle* to it (see
    /// [`ManagedMemoryHandle::is_pin`]): a new allocation whose memory does
    /// not move while any clone of the handle lives, freed when the last
    /// clone drops. It is the only holder (`can_mut()` is true).
    ///
    /// `None`, changing nothing, when the page is not one of this manager's
    /// live pages (released, another manager's, never handed out), when any
    /// byte of the extent is live, quarantined or on an outdated page, or
    /// when a persistent or exclusive page's free slice is not exactly that
    /// extent. Allocates no storage, so it is legal inside a capture window
    /// (the window does not count it as touched). O(1): a hash lookup of the page and the slice-start index of the offset.
    pub fn reclaim_extent(&mut self, view: &StorageHandle) -> Option<ManagedMemoryHandle> {
        self.reclaim_view(view)
    }
}
