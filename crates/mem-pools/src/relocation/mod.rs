//! The pool side of relocation: the values mem-relocate reads and the
//! type-state it drives (plan → copy → commit).
//!
//! - [`RelocationPlan`] reserves a target for every live slice of each
//!   movable outdated page; dropping it frees the targets (a lossless abort).
//! - [`Landed`] can only be built by `copy_relocation` once every copy has
//!   completed, so committing before copying does not compile.
//! - A page moves all-or-nothing: a page with any slice lacking a target is
//!   left out of the plan, and a page that gained a raw address or a pin
//!   after planning is left out of the commit.
//!
//! The types are here; the engine plans (`engine/relocation_plan.rs`),
//! copies and commits (`engine/relocation_copy.rs`) and compacts
//! (`engine/compaction.rs`).

use mem_storage::{ComputeStorage, StorageError, StorageHandle};

use crate::handles::handle_cell::ManagedMemoryHandle;

use crate::handles::keys::SlotKey;

/// The copy port: mem-relocate implements it (host memcpy; CUDA copy stream
/// plus events). [`StorageCopyQueue`] is a plain one over the storage.
pub trait CopyQueue<S: ComputeStorage> {
    /// Wait for (or order after) every stream's queued work before the first copy.
    fn wait_device(&mut self, storage: &mut S) -> Result<(), StorageError>;
    /// Enqueue one copy of `src.size()` bytes.
    fn copy(
        &mut self,
        storage: &mut S,
        src: &StorageHandle,
        dst: &StorageHandle,
    ) -> Result<(), StorageError>;
    /// Wait until every enqueued copy has completed.
    fn wait_copies(&mut self, storage: &mut S) -> Result<(), StorageError>;
}

/// Copies through [`ComputeStorage::copy`], synchronizing the storage
/// before the first copy and after the last.
#[derive(Debug, Clone, Copy, Default)]
pub struct StorageCopyQueue;

impl<S: ComputeStorage> CopyQueue<S> for StorageCopyQueue {
    fn wait_device(&mut self, storage: &mut S) -> Result<(), StorageError> {
        storage.synchronize()
    }
    fn copy(
        &mut self,
        storage: &mut S,
        src: &StorageHandle,
        dst: &StorageHandle,
    ) -> Result<(), StorageError> {
        storage.copy(src, dst)
    }
    fn wait_copies(&mut self, storage: &mut S) -> Result<(), StorageError> {
        storage.synchronize()
    }
}

/// Where a plan may put targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetRoom {
    /// Only room already held in current pages: reserved bytes never grow.
    Held,
    /// New current-size pages may be allocated for targets.
    MayAllocate,
}

/// The shape of the pools as relocation sees it; equal shapes mean nothing
/// changed since the last attempt (the "stalled" memo).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelocationShape {
    /// Pages serving reservations, over every pool.
    pub current_pages: usize,
    /// Outdated pages still held.
    pub outdated_pages: usize,
    /// Outdated pages that cannot move (raw address out, pinned by a graph,
    /// or quarantined).
    pub outdated_pinned: usize,
    /// Capacity bytes of live slices on outdated pages.
    pub outdated_live_bytes: u64,
}

/// Plain data for relocation triggers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelocationState {
    /// Some pool holds outdated pages.
    pub has_outdated: bool,
    /// The largest page a sliced pool would allocate next (its current page
    /// size): what "one more page" costs the device.
    pub next_page_size: u64,
    /// Some growable pool holds as many page sizes as it may: its next
    /// growth fails until relocation frees its outdated pages.
    pub out_of_page_sizes: bool,
    /// The pools' shape.
    pub shape: RelocationShape,
}

#[derive(Debug)]
pub(crate) struct Move {
    pub(crate) source: SlotKey,
    pub(crate) source_slice: u32,
    pub(crate) page: u32,
    pub(crate) target: ManagedMemoryHandle,
    pub(crate) bytes: u64,
}

/// Targets reserved for the live slices of movable outdated pages.
/// Dropping it frees the targets and loses nothing.
#[derive(Debug)]
#[must_use = "dropping a plan abandons it; pass it to copy_relocation"]
pub struct RelocationPlan {
    pub(crate) manager: u64,
    pub(crate) moves: Vec<Move>,
    pub(crate) pages: usize,
    /// Current pages a compaction plan empties, with their uids: the commit
    /// gives each back if it is empty then (current pages are not released
    /// by freeing their last slice, outdated ones are).
    pub(crate) compacted: Vec<(u32, u64)>,
}

impl RelocationPlan {
    /// A plan of `manager` that moves nothing yet: what the planners start
    /// from, and what they return during a capture.
    pub(crate) fn empty(manager: u64) -> RelocationPlan {
        RelocationPlan {
            manager,
            moves: Vec::new(),
            pages: 0,
            compacted: Vec::new(),
        }
    }

    /// Slices to move.
    pub fn moves(&self) -> usize {
        self.moves.len()
    }
    /// Capacity bytes to move.
    pub fn bytes(&self) -> u64 {
        self.moves.iter().map(|m| m.bytes).sum()
    }
    /// Pages the plan would empty: outdated pages ([`crate::MemoryManagement::plan_relocation`])
    /// or sparse current pages ([`crate::MemoryManagement::plan_compaction`]).
    pub fn pages(&self) -> usize {
        self.pages
    }
    /// Nothing to move.
    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }
}

/// A plan whose copies all completed; only `copy_relocation` builds one.
#[derive(Debug)]
#[must_use = "dropping landed copies abandons them; pass them to commit_relocation"]
pub struct Landed {
    pub(crate) plan: RelocationPlan,
}

impl Landed {
    /// Slices whose copies landed.
    pub fn moves(&self) -> usize {
        self.plan.moves()
    }
}

/// Plain data for a compaction trigger: how much of the sliced pools'
/// current pages is holes between live buffers (see
/// [`crate::MemoryManagement::compaction_state`]). Outdated pages, exclusive
/// and persistent pools are not counted (relocation and cleanup handle them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompactionState {
    /// Capacity bytes of live slices on current pages.
    pub current_live_bytes: u64,
    /// Free bytes on current pages that hold live data: the holes a
    /// compaction could fill (empty current pages are cleanup's, not counted).
    pub current_free_bytes: u64,
    /// Current pages holding live data.
    pub current_pages_with_live_data: usize,
    /// At most this many pages a compaction could empty: whole pages' worth
    /// of holes, per pool. An upper bound — holes too small for the slices,
    /// raw-out or pinned pages make the plan's [`RelocationPlan::pages`]
    /// smaller.
    pub compactable_pages: usize,
}

/// What a commit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelocationOutcome {
    /// Allocations now living in their targets.
    pub moved_slices: usize,
    /// Their capacity bytes.
    pub moved_bytes: u64,
    /// Outdated pages given back to the storage.
    pub pages_freed: usize,
    /// Their bytes.
    pub bytes_freed: u64,
}
