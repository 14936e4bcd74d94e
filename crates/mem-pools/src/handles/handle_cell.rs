//! The shared state behind every clone of a handle: a counted cell that the
//! engine recycles, so a reservation allocates nothing.
//!
//! A [`Cell`] holds the holder count, the slot key, the size and the drop
//! queue. A handle is a pointer to one; `clone` is one atomic increment;
//! the last drop pushes the cell itself onto the drop queue's lock-free
//! stack (`drop_queue.rs`), so the cell is the record. The engine's drain
//! takes it, reads the key, and keeps the cell in its `CellPool` (`cell_pool.rs`) for the
//! next reservation. It was an `Arc` allocation per reservation, and with it
//! a `malloc`, a `free` and two more atomic read-modify-writes per pair.
//!
//! **Why a cell's memory stays valid for every holder.** A cell is freed or
//! reused only by whoever owns it with a count of zero: the engine, after
//! its drain took the cell off the stack (nothing holds it then: the count
//! reached zero and a count of zero never rises again, see
//! [`Cell::try_hold`]); the pool's drop, for the cells it kept; or the
//! last holder itself when the engine is gone (the stack is closed). A
//! slot's `holder` pointer (`tables/slots.rs`) is cleared when the slot is
//! released, and the drain releases a cell's slot before it reuses the
//! cell. loom models of the races are in `handle_cell_loom.rs`; miri runs
//! the handle tests.

use std::ptr::NonNull;

use crate::handles::drop_queue::{DropQueue, Linked};
use crate::handles::keys::SlotKey;
use crate::handles::sync::{Arc, AtomicU64, AtomicUsize, Ordering, fence};

/// A handle's shared state (see the module docs).
#[derive(Debug)]
pub(crate) struct Cell {
    /// Holders: clones of this handle (a pin handle's `pinning` holds one of
    /// its allocation's).
    pub(crate) count: AtomicUsize,
    pub(crate) manager: u64,
    pub(crate) key: SlotKey,
    /// Requested bytes; `bind` rewrites it when the handle takes over
    /// another allocation's memory.
    pub(crate) size: AtomicU64,
    /// Set on a graph's pin handle: the allocation's own handle, held so
    /// the allocation outlives every pin. `None` on an allocation's cell.
    pub(crate) pinning: Option<ManagedMemoryHandle>,
    pub(crate) queue: Arc<DropQueue<Cell>>,
    /// The next cell on the drop stack or in the pool; written only by the
    /// cell's sole owner.
    pub(crate) next: *mut Cell,
}

impl Cell {
    /// Add a holder to a cell that has one (a clone).
    pub(crate) fn hold(&self) {
        // Relaxed, like `Arc::clone`: the new holder comes from an existing
        // one, which keeps the cell alive meanwhile.
        if self.count.fetch_add(1, Ordering::Relaxed) > isize::MAX as usize {
            std::process::abort();
        }
    }

    /// Add a holder unless the last one already dropped (the engine's way
    /// back from a slot to its handle, like `Weak::upgrade`).
    pub(crate) fn try_hold(&self) -> bool {
        (self.count)
            .fetch_update(Ordering::Acquire, Ordering::Relaxed, |n| {
                (n != 0).then_some(n + 1)
            })
            .is_ok()
    }

    /// Current holders.
    pub(crate) fn holders(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Drop one holder; the last one hands the cell to the engine.
    ///
    /// # Safety
    /// `cell` is live and the caller gives up one holder of it.
    #[inline]
    pub(crate) unsafe fn release(cell: NonNull<Cell>) {
        // SAFETY: the caller still holds the cell, so it is live.
        let this = unsafe { cell.as_ref() };
        if this.count.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        // Every other holder's uses happen before the cell changes hands.
        fence(Ordering::Acquire);
        let queue = Arc::as_ptr(&this.queue);
        // SAFETY: the count is zero and the cell on no list: ours alone;
        // `queue` is the queue it holds.
        if !unsafe { DropQueue::push_cell(queue, cell.as_ptr()) } {
            // The engine is gone (its queue closed): nobody will take the
            // cell, so it is freed here (and the queue with its last cell).
            // SAFETY: the cell came from `Box::leak` and is ours alone.
            drop(unsafe { Box::from_raw(cell.as_ptr()) });
        }
    }
}

impl Linked for Cell {
    unsafe fn set_next(cell: *mut Cell, next: *mut Cell) {
        // SAFETY: the caller's exclusive ownership.
        unsafe { (*cell).next = next };
    }

    unsafe fn next(cell: *mut Cell) -> *mut Cell {
        // SAFETY: the caller's exclusive ownership.
        unsafe { (*cell).next }
    }
}

// The drop stack's closed mark is address 1, never a cell's (see `Linked`).
const _: () = assert!(std::mem::align_of::<Cell>() > 1);

/// An owning handle to one allocation of a [`crate::MemoryManagement`].
///
/// `Clone` adds a holder (one atomic increment); the allocation is freed
/// when the last holder drops, on any thread. `Send + Sync`.
pub struct ManagedMemoryHandle {
    /// The shared state of every clone (a [`Cell`]).
    pub(crate) cell: NonNull<Cell>,
}

// SAFETY: a handle is a counted reference to a `Cell`, whose shared parts
// are atomics and immutable fields (like `Arc<Cell>`), and whose last
// holder may hand it back from any thread (the drop queue is lock-free).
unsafe impl Send for ManagedMemoryHandle {}
// SAFETY: as for `Send`: `&ManagedMemoryHandle` reads atomics and
// immutable fields only.
unsafe impl Sync for ManagedMemoryHandle {}

impl Clone for ManagedMemoryHandle {
    fn clone(&self) -> Self {
        self.cell().hold();
        Self { cell: self.cell }
    }
}

impl Drop for ManagedMemoryHandle {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: this handle is one holder of its live cell, given up here.
        // O(1): the engine frees (or unpins) the slot at its next call; a
        // key whose generation moved on meanwhile (bind, relocation) is
        // ignored there.
        unsafe { Cell::release(self.cell) };
    }
}

impl ManagedMemoryHandle {
    /// The cell this handle holds.
    pub(crate) fn cell(&self) -> &Cell {
        // SAFETY: a live handle is a holder, so its cell is live.
        unsafe { self.cell.as_ref() }
    }
}
