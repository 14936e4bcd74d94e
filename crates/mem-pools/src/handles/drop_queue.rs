//! The drop queue: where a holder ended on any thread leaves its free (or
//! unpin, or unraw) for the engine.
//!
//! Two lanes, drained together at the engine's next `&mut self` call, each
//! record then costing O(1). Nothing scans.
//!
//! - **Handle cells** (the hot lane). A handle's last holder pushes the
//!   handle's own cell (`handle_cell.rs`) onto a lock-free stack: one
//!   compare-and-swap, no lock, no allocation — the cell *is* the record
//!   and the queue's node. The engine takes the whole stack with one swap
//!   and recycles the cells for its next reservations. (This replaced a
//!   mutex-guarded `Vec` of records plus an `Arc` allocation per handle: a
//!   reserve+drop pair paid a `malloc`, a `free` and six atomic
//!   read-modify-writes, now three.)
//! - **Records** (raw pins, rare): a mutex-guarded `Vec` with a "records
//!   pending" flag, so a drain with nothing there reads one flag and takes
//!   no lock.
//!
//! When the engine is dropped it *closes* the stack (a sentinel head): a
//! cell pushed after that is freed by its pusher instead, so nothing leaks
//! and nothing is freed twice (the loom models in `handle_cell_loom.rs`).

use std::ptr;
use std::sync::PoisonError;

use crate::handles::keys::Dropped;
use crate::handles::sync::{AtomicBool, AtomicPtr, Mutex, Ordering};

/// Capacity the engine's drain buffer keeps between drains; a burst larger
/// than this (dropping a million handles at once) gives its memory back.
const KEPT_CAPACITY: usize = 4096;

/// The closed stack's head: never a cell's address (cells are aligned to
/// 8 bytes, so address 1 is none of them).
fn closed<C>() -> *mut C {
    ptr::without_provenance_mut(1)
}

/// A node of the lock-free stack (a handle cell): a link that only the
/// node's sole owner reads or writes. Implementors are aligned to more than
/// one byte, so address 1 ([`closed`]) is never a node's.
pub(crate) trait Linked {
    /// Link `node` to `next`.
    ///
    /// # Safety
    /// `node` is live and owned by the caller alone.
    unsafe fn set_next(node: *mut Self, next: *mut Self);

    /// The node `node` links to.
    ///
    /// # Safety
    /// `node` is live and owned by the caller alone.
    unsafe fn next(node: *mut Self) -> *mut Self;
}

/// Ended holders, waiting for the engine's next call.
#[derive(Debug)]
pub(crate) struct DropQueue<C> {
    /// Cells of handles whose last holder dropped, newest first; null when
    /// empty, [`closed`] once the engine is gone.
    cells: AtomicPtr<C>,
    records: Mutex<Vec<Dropped>>,
    /// Whether `records` may hold records: written only under the lock,
    /// read without it. A push that happened before the drain (same
    /// thread, or synchronised with it) is always seen.
    any: AtomicBool,
}

impl<C> DropQueue<C> {
    pub(crate) fn new() -> Self {
        Self {
            cells: AtomicPtr::new(ptr::null_mut()),
            records: Mutex::new(Vec::new()),
            any: AtomicBool::new(false),
        }
    }

    /// Queue one record (any thread). O(1) amortised.
    pub(crate) fn push(&self, dropped: Dropped) {
        // A poisoned lock only means a pusher panicked mid-push (a `Vec`
        // push cannot leave it half-written), so the records are intact.
        let mut pending = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        pending.push(dropped);
        self.any.store(true, Ordering::Release);
    }

    /// Whether anything may be waiting (a hint; exact for pushes that
    /// happened before this call).
    #[inline]
    pub(crate) fn has_pending(&self) -> bool {
        let cells = self.cells.load(Ordering::Relaxed);
        (!cells.is_null() && cells != closed()) || self.any.load(Ordering::Acquire)
    }

    /// Move every pending record into `batch`, leaving `batch`'s old buffer
    /// behind for the next pushes: one lock, a swap — or nothing at all
    /// when no record is pending.
    #[inline]
    pub(crate) fn take_records(&self, batch: &mut Vec<Dropped>) {
        if self.any.load(Ordering::Acquire) {
            self.swap_records(batch);
        }
    }

    /// [`Self::take_records`] with records pending: out of line, so the
    /// drain's common case (none) is one flag read where it is called.
    #[inline(never)]
    fn swap_records(&self, batch: &mut Vec<Dropped>) {
        debug_assert!(batch.is_empty());
        let mut pending = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        self.any.store(false, Ordering::Relaxed);
        std::mem::swap(&mut *pending, batch);
    }
}

impl<C: Linked> DropQueue<C> {
    /// Push a cell whose last holder just dropped (any thread). Returns
    /// `false` when the engine is gone: the caller owns the cell still and
    /// frees it.
    ///
    /// Takes the queue by pointer, not `&self`: once the exchange publishes
    /// the cell, the engine may take and free it — and with it the last
    /// reference to the queue — before this call returns, so no reference
    /// to the queue may outlive the exchange (the `Arc::drop` pattern).
    ///
    /// # Safety
    /// `queue` is the queue the cell holds (so it lives while the cell is
    /// unpublished); `cell` is a live cell no one else can reach: its
    /// count is zero and it is on no list.
    pub(crate) unsafe fn push_cell(queue: *const DropQueue<C>, cell: *mut C) -> bool {
        // SAFETY: the cell holds the queue alive until it is published.
        let cells = unsafe { &(*queue).cells };
        let mut head = cells.load(Ordering::Relaxed);
        loop {
            if head == closed() {
                return false;
            }
            // SAFETY: the caller gives us the only access to `cell` until
            // the exchange below publishes it.
            unsafe { C::set_next(cell, head) };
            // Release: the cell's contents (and the holders' last uses)
            // happen before the engine's acquiring swap takes it.
            match cells.compare_exchange_weak(head, cell, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(now) => head = now,
            }
        }
    }

    /// Take every pushed cell, oldest first (the stack reversed, so frees
    /// are processed in the order they happened, as a FIFO queue would).
    /// The caller owns the returned list (linked through the cells).
    #[inline]
    pub(crate) fn take_cells(&self) -> *mut C {
        if self.cells.load(Ordering::Relaxed).is_null() {
            return ptr::null_mut();
        }
        let mut list = self.cells.swap(ptr::null_mut(), Ordering::Acquire);
        let mut oldest_first = ptr::null_mut();
        while !list.is_null() {
            // SAFETY: the swap gave this thread the whole list; each cell
            // on it is owned by the list alone.
            unsafe {
                let next = C::next(list);
                C::set_next(list, oldest_first);
                oldest_first = list;
                list = next;
            }
        }
        oldest_first
    }

    /// Call `f` on every pushed cell, newest first, leaving them pushed.
    ///
    /// # Safety
    /// No [`Self::take_cells`] or [`Self::close`] runs until this returns:
    /// the caller is the one owner of the right to take (the engine's
    /// `CellPool`, which takes by `&mut self` and peeks by `&self`). Then
    /// every cell on the stack stays published and unchanged: pushers only
    /// write the `next` link of a cell before their exchange publishes it.
    pub(crate) unsafe fn peek_cells(&self, mut f: impl FnMut(*mut C)) {
        // Acquire: every exchange that pushed a cell still on the stack is
        // in the release sequence of the head read here (each push is a
        // read-modify-write of the head), so its cell's contents are seen.
        let mut cell = self.cells.load(Ordering::Acquire);
        if cell == closed() {
            return;
        }
        while !cell.is_null() {
            f(cell);
            // SAFETY: `cell` is published and, by the caller's guarantee,
            // not taken: its link is no longer written by anyone.
            cell = unsafe { C::next(cell) };
        }
    }

    /// Close the stack (the engine is being dropped) and return what was
    /// on it: from now on a pushing holder frees its cell itself.
    pub(crate) fn close(&self) -> *mut C {
        self.cells.swap(closed(), Ordering::Acquire)
    }
}

/// Empty a processed batch, keeping a bounded buffer for the next one.
pub(crate) fn recycle(batch: &mut Vec<Dropped>) {
    batch.clear();
    if batch.capacity() > KEPT_CAPACITY {
        batch.shrink_to(KEPT_CAPACITY);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::handles::keys::{DropKind, SlotKey};

    fn record(slot: u32) -> Dropped {
        Dropped {
            key: SlotKey {
                slot,
                generation: 0,
            },
            kind: DropKind::Free,
        }
    }

    #[test]
    fn records_pushed_from_other_threads_come_out_once_each_in_push_order_per_thread() {
        let queue = std::sync::Arc::new(DropQueue::<()>::new());
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let queue = queue.clone();
                std::thread::spawn(move || (0..1000).for_each(|i| queue.push(record(t * 1000 + i))))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let mut batch = Vec::new();
        queue.take_records(&mut batch);
        assert_eq!(batch.len(), 4000);
        for t in 0..4u32 {
            let mine: Vec<u32> = batch
                .iter()
                .map(|d| d.key.slot)
                .filter(|s| s / 1000 == t)
                .collect();
            assert_eq!(mine, (t * 1000..(t + 1) * 1000).collect::<Vec<_>>());
        }
        recycle(&mut batch);
        assert!(!queue.has_pending());
        queue.take_records(&mut batch);
        assert!(batch.is_empty(), "a taken record is never taken again");
    }

    #[test]
    fn a_burst_gives_its_memory_back_after_the_drain() {
        let queue = DropQueue::<()>::new();
        (0..10 * KEPT_CAPACITY as u32).for_each(|i| queue.push(record(i)));
        let mut batch = Vec::new();
        queue.take_records(&mut batch);
        assert_eq!(batch.len(), 10 * KEPT_CAPACITY);
        recycle(&mut batch);
        assert!(batch.is_empty() && batch.capacity() <= KEPT_CAPACITY);
        queue.push(record(1));
        assert!(queue.has_pending());
        let mut next = Vec::new();
        queue.take_records(&mut next);
        assert_eq!(next.len(), 1);
    }
}
