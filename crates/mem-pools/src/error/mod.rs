//! The error types of this crate.
//!
//! [`IoError`] is the one error of every engine call; the two narrow enums
//! ([`InstallMemoryPoolsError`], [`RelocationCopyError`]) belong to the two
//! operations whose failure modes differ in kind (a refusal that leaves the
//! old layout in place; a copy whose completion is unknown). Every variant
//! carries the numbers a caller needs to act on it. Which refusals are
//! out of memory is `classify.rs`; a refused bind that hands both handles
//! back is `bind_refused.rs`.

use mem_storage::StorageError;

mod bind_refused;
mod classify;

pub use bind_refused::BindRefused;

/// What went wrong in a call to the pool engine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IoError {
    /// The storage under the pools refused (out of memory, unknown id, ...).
    #[error("storage error: {0}")]
    Storage(#[from] StorageError),
    /// The binding names an allocation that has been freed (its last handle
    /// dropped, or it was handed to another handle by `bind`, or its pools
    /// were replaced by `install_pools`).
    #[error(
        "stale binding (slot {slot}, generation {generation}): the allocation was freed; keep a handle alive while its binding is used"
    )]
    StaleBinding {
        /// Slot index the binding names.
        slot: u32,
        /// Generation the binding was issued for.
        generation: u32,
    },
    /// The binding or handle was issued by a different `MemoryManagement`.
    #[error(
        "binding from manager #{found} used on manager #{expected}: resolve it on the manager that reserved it"
    )]
    ForeignBinding {
        /// This manager's id.
        expected: u64,
        /// The id carried by the binding.
        found: u64,
    },
    /// A sub-range of an allocation that does not lie inside it.
    #[error("range {start}..{end} lies outside the allocation of {size} bytes")]
    OutOfBounds {
        /// First byte asked for.
        start: u64,
        /// One past the last byte asked for.
        end: u64,
        /// Requested size of the allocation.
        size: u64,
    },
    /// No pool accepts an allocation of this size.
    #[error(
        "no pool accepts {size} bytes: the largest allocation this layout serves is {max} bytes; split the buffer or install a layout with a larger pool"
    )]
    BufferTooBig {
        /// Bytes asked for.
        size: u64,
        /// The largest size any pool accepts.
        max: u64,
    },
    /// A size whose alignment padding overflows `u64`.
    #[error("invalid size {size}: rounding it up to the {alignment}-byte alignment overflows")]
    InvalidSize {
        /// Bytes asked for.
        size: u64,
        /// The alignment it was rounded to.
        alignment: u64,
    },
    /// Inside a capture window (after priming ended) the pool would have had
    /// to allocate new device memory, which is illegal while a graph records.
    #[error(
        "allocation of {} inside the capture window needs a new page of {}: \
         lengthen the warmup so priming reaches the recorded pass's whole working set",
        mem_storage::units::format_bytes(*size),
        mem_storage::units::format_bytes(*page_size)
    )]
    CaptureWouldAllocate {
        /// Bytes asked for.
        size: u64,
        /// Size of the page that would have been allocated.
        page_size: u64,
    },
    /// A sliced pool needs a larger page size but already has as many page
    /// sizes alive as it may hold; relocating its outdated pages frees them.
    #[error(
        "pool {pool} needs pages of {wanted} bytes but already holds {generations} page sizes: relocate its outdated pages, then retry"
    )]
    PageSizesExhausted {
        /// Routing position of the pool.
        pool: usize,
        /// The page size the allocation needed.
        wanted: u64,
        /// Page sizes alive in the pool.
        generations: usize,
    },
    /// Every slot or page index is in use (2^32 − 1 of them).
    #[error("{what} indices exhausted ({limit} in use): free allocations before reserving more")]
    IndexExhausted {
        /// `"slot"` or `"page"`.
        what: &'static str,
        /// The number of indices in use.
        limit: u64,
    },
    /// `bind` was given a reserved handle that others still hold; moving its
    /// memory would leave them naming nothing.
    #[error(
        "bind: the reserved handle has {holders} holders; pass the only holder (drop clones first)"
    )]
    SharedReserved {
        /// Holders of the reserved handle, counting the one passed.
        holders: usize,
    },
    /// `bind` would free memory a captured graph was given by `capture_end`.
    #[error(
        "bind: the assigned handle's {size}-byte memory is pinned by a captured graph; bind to a handle the graph does not use"
    )]
    AssignedPinned {
        /// Requested bytes of the pinned memory.
        size: u64,
    },
    /// A relocation plan or landed copy made by another manager.
    #[error("relocation from manager #{found} committed on manager #{expected}")]
    ForeignRelocation {
        /// This manager's id.
        expected: u64,
        /// The id carried by the plan.
        found: u64,
    },
    /// The arenas' physical memory was released by `sleep`: `wake` first.
    #[error(
        "{operation} while the memory is asleep ({sleeping_bytes} bytes of live arena data have no physical memory): call wake first"
    )]
    Asleep {
        /// What was asked (`"reserve"`, `"sleep"`, `"a capture"`).
        operation: &'static str,
        /// Bytes of live arena slices' chunks released by the sleep.
        sleeping_bytes: u64,
    },
}

/// Why [`crate::MemoryManagement::install_pools`] refused a new layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InstallMemoryPoolsError {
    /// Something is still live in the dynamic pools; the old layout is kept.
    #[error(
        "{live_slices} allocations ({live_bytes} bytes) are still live in the dynamic pools: \
         drop them (or reserve them in Persistent mode) and retry"
    )]
    PoolsInUse {
        /// Live slices in the dynamic pools.
        live_slices: usize,
        /// Their requested bytes.
        live_bytes: u64,
    },
    /// Nothing is live, but some of the old pools' memory could not go
    /// back to the device at install's cleanup: an arena's idle chunk whose
    /// stream work has not completed (it is unmapped only once that work
    /// is done, and cleanup never waits), or a page the device refused to
    /// take back. The old layout is kept.
    #[error(
        "no allocation is live, but {pages} pages ({reserved_bytes} bytes) of the old layout are \
         still held: their freed memory waits for work queued on its streams (or the device \
         refused it back); synchronize the streams and retry"
    )]
    PagesHeld {
        /// Pages (arena ranges included) the old dynamic pools still hold.
        pages: u64,
        /// The bytes they hold from the device.
        reserved_bytes: u64,
    },
    /// Nothing is live, but pages of the old pools hold memory that a failed
    /// relocation wait quarantined ([`RelocationCopyError::Wait`]): the
    /// device never confirmed those copies finished, so that memory is never
    /// reused and never given back while this manager lives, and its pages
    /// cannot be discarded. No retry helps; the old layout is kept and stays
    /// usable (new reservations avoid the quarantined bytes).
    #[error(
        "no allocation is live, but {pages} pages ({reserved_bytes} bytes) of the old layout hold \
         memory quarantined after a failed relocation wait ({leaked_bytes} bytes leaked on this \
         manager; the device never confirmed those copies finished, so it is never reused or \
         given back): the layout cannot be replaced on this manager; keep using the old layout, \
         or build a new manager for the new one"
    )]
    PagesQuarantined {
        /// Pages of the old dynamic pools holding quarantined slices.
        pages: u64,
        /// The bytes those pages hold from the device.
        reserved_bytes: u64,
        /// All bytes this manager has quarantined (`MemoryStats::leaked_bytes`).
        leaked_bytes: u64,
    },
    /// A capture is open: nothing may be given back until it ends.
    #[error("a graph capture is open: install the new layout after capture_end")]
    CaptureActive,
}

/// Why [`crate::MemoryManagement::copy_relocation`] produced no [`crate::Landed`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RelocationCopyError {
    /// A copy could not be enqueued (or waiting for the device before the
    /// first copy failed). Every wait completed, so the targets were freed and
    /// nothing moved.
    #[error("relocation copy failed after {enqueued} of {moves} copies; nothing moved: {source}")]
    Copy {
        /// Copies enqueued before the failure.
        enqueued: usize,
        /// Copies the plan held.
        moves: usize,
        /// The storage's error.
        source: StorageError,
    },
    /// Waiting for the copies failed: their completion is unknown, so both
    /// sources and targets are leaked (never reused) rather than freed.
    #[error(
        "waiting for {moves} relocation copies failed; {leaked_bytes} bytes are leaked rather than risk reuse: {source}"
    )]
    Wait {
        /// Copies the plan held.
        moves: usize,
        /// Bytes of sources and targets now quarantined.
        leaked_bytes: u64,
        /// The storage's error.
        source: StorageError,
    },
    /// The plan was made by another manager; nothing was copied.
    #[error("relocation plan from manager #{found} copied on manager #{expected}")]
    Foreign {
        /// This manager's id.
        expected: u64,
        /// The id carried by the plan.
        found: u64,
    },
}
