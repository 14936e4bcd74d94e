//! The shared state behind every clone of a handle: a counted cell that the
//! engine recycles, so a reservation allocates nothing.
//!
//! A [`Cell`] holds the holder count, the slot key, the size and the drop
//! queue. A handle is a pointer to one; `clone` is one atomic increment;
//! the last drop pushes the cell itself onto the drop queue's lock-free
//! stack (`drop_queue.rs`), so the cell is the record. The engine's drain
//! takes it, reads the key, and keeps the cell in its [`CellPool`] for the
//! next reservation. It was an `Arc` allocation per reservation, and with it
//! a `malloc`, a `free` and two more atomic read-modify-writes per pair.
//!
//! **Why a cell's memory stays valid for every holder.** A cell is freed or
//! reused only by whoever owns it with a count of zero: the engine, after
//! its drain took the cell off the stack (nothing holds it then: the count
//! reached zero and a count of zero never rises again, see
//! [`Cell::try_hold`]); the pool's drop, for the cells it kept; or the
//! last holder itself when the engine is gone (the stack is closed). A
//! slot's `holder` pointer (`slots.rs`) is cleared when the slot is
//! released, and the drain releases a cell's slot before it reuses the
//! cell. loom models of the races are in `handle_cell_loom.rs`; miri runs
//! the handle tests.

use std::ptr::{self, NonNull};

use crate::handles::drop_queue::DropQueue;
use crate::handles::handle::{DropKind, Dropped, ManagedMemoryHandle, SlotKey};
use crate::handles::sync::{Arc, AtomicU64, AtomicUsize, Ordering, fence};

/// Cells a pool keeps for reuse; more than this (after a burst of frees)
/// are freed.
const KEPT_CELLS: usize = 4096;

/// A handle's shared state (see the module docs).
#[derive(Debug)]
pub(crate) struct Cell {
    /// Holders: clones of this handle (a pin handle's `pinning` holds one of
    /// its allocation's).
    count: AtomicUsize,
    pub(crate) manager: u64,
    pub(crate) key: SlotKey,
    /// Requested bytes; `bind` rewrites it when the handle takes over
    /// another allocation's memory.
    pub(crate) size: AtomicU64,
    /// Set on a graph's pin handle: the allocation's own handle, held so
    /// the allocation outlives every pin. `None` on an allocation's cell.
    pub(crate) pinning: Option<ManagedMemoryHandle>,
    queue: Arc<DropQueue>,
    /// The next cell on the drop stack or in the pool; written only by the
    /// cell's sole owner.
    next: *mut Cell,
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

    /// # Safety
    /// `cell` is live and owned by the caller alone.
    pub(crate) unsafe fn set_next(cell: *mut Cell, next: *mut Cell) {
        // SAFETY: the caller's exclusive ownership.
        unsafe { (*cell).next = next };
    }

    /// # Safety
    /// `cell` is live and owned by the caller alone.
    pub(crate) unsafe fn next(cell: *mut Cell) -> *mut Cell {
        // SAFETY: the caller's exclusive ownership.
        unsafe { (*cell).next }
    }
}

/// The engine's side: makes cells (reusing freed ones) and drains them.
#[derive(Debug)]
pub(crate) struct CellPool {
    queue: Arc<DropQueue>,
    manager: u64,
    /// Cells owned by the pool, count zero, ready for reuse.
    spare: Vec<NonNull<Cell>>,
}

// SAFETY: the pool owns its spare cells outright (no holder can reach a
// cell with a count of zero), and a cell's contents are `Send`.
unsafe impl Send for CellPool {}
// SAFETY: `&CellPool` exposes nothing of the spare cells.
unsafe impl Sync for CellPool {}

impl CellPool {
    pub(crate) fn new(manager: u64) -> Self {
        Self {
            queue: Arc::new(DropQueue::new()),
            manager,
            spare: Vec::new(),
        }
    }

    /// The queue raw pins push their records onto.
    pub(crate) fn queue(&self) -> &Arc<DropQueue> {
        &self.queue
    }

    /// A cell with one holder, reused when the pool has one.
    pub(crate) fn make(
        &mut self,
        key: SlotKey,
        size: u64,
        pinning: Option<ManagedMemoryHandle>,
    ) -> NonNull<Cell> {
        match self.spare.pop() {
            Some(cell) => {
                // SAFETY: a spare cell is the pool's alone (count zero, on
                // no list) and live; the writes finish before any holder
                // exists, and handing the handle to another thread orders
                // them before that thread's reads.
                unsafe {
                    let c = &mut *cell.as_ptr();
                    c.count.store(1, Ordering::Relaxed);
                    c.key = key;
                    c.size.store(size, Ordering::Relaxed);
                    c.pinning = pinning;
                    c.next = ptr::null_mut();
                }
                cell
            }
            None => NonNull::from(Box::leak(Box::new(Cell {
                count: AtomicUsize::new(1),
                manager: self.manager,
                key,
                size: AtomicU64::new(size),
                pinning,
                queue: Arc::clone(&self.queue),
                next: ptr::null_mut(),
            }))),
        }
    }

    /// Whether any holder ended since the last drain (a hint).
    pub(crate) fn has_pending(&self) -> bool {
        self.queue.has_pending()
    }

    /// Move every ended holder into `out`, in the order they ended (raw
    /// pins' records first), and keep their cells for reuse. A pin cell's
    /// allocation handle is dropped here, so the allocation's own free (if
    /// that was its last holder) is taken by the next round: after the
    /// unpin, as it must be.
    pub(crate) fn take(&mut self, out: &mut Vec<Dropped>) {
        self.queue.take_records(out);
        let mut cell = self.queue.take_cells();
        while let Some(c) = NonNull::new(cell) {
            // SAFETY: `take_cells` gave the pool the whole list; each cell
            // is live and owned by it alone (count zero).
            let (key, pinning, next) = unsafe {
                let c = &mut *c.as_ptr();
                (c.key, c.pinning.take(), c.next)
            };
            let kind = match pinning {
                Some(_) => DropKind::Unpin,
                None => DropKind::Free,
            };
            out.push(Dropped { key, kind });
            drop(pinning);
            self.keep(c);
            cell = next;
        }
    }

    /// Keep a count-zero cell the pool owns for reuse, or free it.
    fn keep(&mut self, cell: NonNull<Cell>) {
        if self.spare.len() < KEPT_CELLS {
            self.spare.push(cell);
        } else {
            // SAFETY: from `Box::leak`, owned by the pool alone.
            drop(unsafe { Box::from_raw(cell.as_ptr()) });
        }
    }
}

impl Drop for CellPool {
    fn drop(&mut self) {
        // Close first: a holder dropping from now on frees its own cell.
        let mut cell = self.queue.close();
        while let Some(c) = NonNull::new(cell) {
            // SAFETY: `close` gave the pool the list; each cell is its alone.
            cell = unsafe { Cell::next(c.as_ptr()) };
            // SAFETY: from `Box::leak`, owned by the pool alone. Dropping a
            // pin cell drops its allocation handle, which frees that cell
            // itself now that the queue is closed.
            drop(unsafe { Box::from_raw(c.as_ptr()) });
        }
        for c in self.spare.drain(..) {
            // SAFETY: spare cells are the pool's alone.
            drop(unsafe { Box::from_raw(c.as_ptr()) });
        }
    }
}

#[cfg(all(test, not(loom)))]
#[path = "handle_cell_tests.rs"]
mod tests;
