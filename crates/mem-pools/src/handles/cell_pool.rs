//! The engine's side of the handle cells: [`CellPool`] makes cells
//! (reusing freed ones), drains the drop queue into records, and frees
//! what it kept when the engine goes (see `handle_cell.rs` for why a
//! cell's memory stays valid for every holder).

use std::ptr::{self, NonNull};

use crate::handles::drop_queue::{DropQueue, Linked};
use crate::handles::handle_cell::Cell;
use crate::handles::handle_cell::ManagedMemoryHandle;
use crate::handles::keys::{DropKind, Dropped, SlotKey};
use crate::handles::sync::{Arc, AtomicU64, AtomicUsize, Ordering};

/// Cells taken off the drop queue and not yet handed out by
/// [`CellPool::next_taken`], oldest first, linked through their `next`.
#[must_use]
pub(crate) struct TakenCells(*mut Cell);

/// Cells a pool keeps for reuse; more than this (after a burst of frees)
/// are freed.
const KEPT_CELLS: usize = 4096;

/// The engine's side: makes cells (reusing freed ones) and drains them.
#[derive(Debug)]
pub(crate) struct CellPool {
    queue: Arc<DropQueue<Cell>>,
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
    pub(crate) fn queue(&self) -> &Arc<DropQueue<Cell>> {
        &self.queue
    }

    /// A cell with one holder, reused when the pool has one.
    #[inline]
    pub(crate) fn make(
        &mut self,
        key: SlotKey,
        size: u64,
        pinning: Option<ManagedMemoryHandle>,
    ) -> NonNull<Cell> {
        let Some(cell) = self.spare.pop() else {
            return self.make_new(key, size, pinning);
        };
        // SAFETY: a spare cell is the pool's alone (count zero, on no list)
        // and live; the writes finish before any holder exists, and handing
        // the handle to another thread orders them before that thread's
        // reads. Its `pinning` is `None` (`next_taken` took it out), so
        // writing over it drops nothing.
        unsafe {
            let c = &mut *cell.as_ptr();
            debug_assert!(c.pinning.is_none());
            c.count.store(1, Ordering::Relaxed);
            c.key = key;
            c.size.store(size, Ordering::Relaxed);
            ptr::write(&mut c.pinning, pinning);
            c.next = ptr::null_mut();
        }
        cell
    }

    /// A fresh cell (no spare one left), off the reuse path.
    #[cold]
    #[inline(never)]
    fn make_new(
        &mut self,
        key: SlotKey,
        size: u64,
        pinning: Option<ManagedMemoryHandle>,
    ) -> NonNull<Cell> {
        NonNull::from(Box::leak(Box::new(Cell {
            count: AtomicUsize::new(1),
            manager: self.manager,
            key,
            size: AtomicU64::new(size),
            pinning,
            queue: Arc::clone(&self.queue),
            next: ptr::null_mut(),
        })))
    }

    /// The slot key of every allocation whose last handle dropped since the
    /// last drain ([`Self::take_records`], [`Self::take_cells`]): the allocations' own cells, and the allocations
    /// whose only holders left are the pending pin handles' (a graph's pins
    /// dropped after the user's handle: `take` lets those go, so the drain
    /// frees them). A pin handle's cell is not an allocation of its own.
    pub(crate) fn for_each_pending(&self, mut f: impl FnMut(SlotKey)) {
        // Pending pins per allocation cell (rare: only after a capture).
        let mut pins: Vec<(NonNull<Cell>, usize)> = Vec::new();
        // SAFETY: only `take` (by `&mut self`) and `drop` take from or close
        // this pool's queue, and `&self` here excludes both.
        unsafe {
            self.queue.peek_cells(|cell| {
                // SAFETY: a published cell stays live and unchanged until
                // taken; its key and pinning were written before its push.
                let cell = &*cell;
                match &cell.pinning {
                    None => f(cell.key),
                    Some(allocation) => {
                        match pins.iter_mut().find(|(c, _)| *c == allocation.cell) {
                            Some((_, n)) => *n += 1,
                            None => pins.push((allocation.cell, 1)),
                        }
                    }
                }
            });
        }
        for (cell, n) in pins {
            // SAFETY: a pending pin cell holds its allocation's cell (one
            // holder each), so that cell is live while the queue holds them.
            let cell = unsafe { cell.as_ref() };
            // Its holders are exactly the pending pins: none can be added
            // (a pending cell is no handle), so the drain frees it.
            if cell.holders() == n {
                f(cell.key);
            }
        }
    }

    /// Whether any holder ended since the last drain (a hint).
    #[inline]
    pub(crate) fn has_pending(&self) -> bool {
        self.queue.has_pending()
    }

    /// Move every ended holder into `out`, in the order they ended (raw
    /// pins' records first), and keep their cells for reuse. A pin cell's
    /// allocation handle is dropped here, so the allocation's own free (if
    /// that was its last holder) is taken by the next round: after the
    /// unpin, as it must be. (The engine's drain takes the two lanes
    /// itself, [`Self::take_records`] then [`Self::take_cells`], and frees
    /// each cell's slot as it goes, with no batch in between.)
    #[cfg(test)]
    pub(crate) fn take(&mut self, out: &mut Vec<Dropped>) {
        self.take_records(out);
        let mut cells = self.take_cells();
        while let Some(dropped) = self.next_taken(&mut cells) {
            out.push(dropped);
        }
    }

    /// Move the pending raw pins' records into `out` (one flag read when
    /// there are none).
    #[inline]
    pub(crate) fn take_records(&self, out: &mut Vec<Dropped>) {
        self.queue.take_records(out);
    }

    /// Take every cell whose last holder ended, oldest first. The pool owns
    /// them from now on; [`Self::next_taken`] hands out their records one
    /// at a time and keeps each cell for reuse. Pass the list to it until
    /// it returns `None` (a cell left on it would leak, never be reused
    /// early).
    #[inline]
    pub(crate) fn take_cells(&mut self) -> TakenCells {
        TakenCells(self.queue.take_cells())
    }

    /// The record of the next taken cell (oldest first), its cell kept for
    /// reuse. A pin cell's allocation handle is dropped here: if that was
    /// the allocation's last holder its own cell is queued, for the next
    /// round, after this unpin.
    #[inline]
    pub(crate) fn next_taken(&mut self, cells: &mut TakenCells) -> Option<Dropped> {
        let c = NonNull::new(cells.0)?;
        // SAFETY: `take_cells` gave the pool the whole list; each cell
        // is live and owned by it alone (count zero).
        let (key, pinning, next) = unsafe {
            let c = &mut *c.as_ptr();
            (c.key, c.pinning.take(), c.next)
        };
        cells.0 = next;
        let kind = match pinning {
            Some(_) => DropKind::Unpin,
            None => DropKind::Free,
        };
        drop(pinning);
        self.keep(c);
        Some(Dropped { key, kind })
    }

    /// Keep a count-zero cell the pool owns for reuse, or free it.
    #[inline]
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
