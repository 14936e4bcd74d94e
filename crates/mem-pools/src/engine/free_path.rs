//! The free path: draining the drop queue, flushing released pages, and
//! aging idle exclusive pages.
//!
//! Dropping the last holder of a handle (any thread) pushes its slot key
//! onto the drop queue (`drop_queue.rs`); the engine drains it at its next call. Each key
//! costs O(1): release the slot (its generation moves on; a key whose
//! generation already moved — `bind`, relocation — is ignored) and free the
//! slice (coalesce, or release an emptied outdated page). A graph's pin
//! handle queues an *unpin* instead: one pin less on the slice, O(1), and
//! its page may move again once no pin, raw address or quarantine remains;
//! a dropped [`crate::RawPin`] queues an *unraw*, likewise.
//! Nothing scans.

use mem_storage::ComputeStorage;

use crate::engine::state::MemoryManagement;
use crate::handles::drop_queue::recycle;
use crate::handles::keys::{DropKind, Dropped};

impl<S: ComputeStorage> MemoryManagement<S> {
    /// Free every slot whose last handle dropped: O(1) each, no scan.
    ///
    /// Inlined at every call: most calls (most reservations of a burst)
    /// find nothing dropped since the last one, and pay one atomic load.
    #[inline]
    pub(crate) fn drain(&mut self) {
        if self.cells.has_pending() {
            self.drain_pending();
        }
        self.settle();
    }

    /// [`Self::drain`] on the reserve path: the rounds inlined there too,
    /// since a reservation after a free (every other call of a steady
    /// alloc/free mix) drains.
    #[inline(always)]
    pub(crate) fn drain_here(&mut self) {
        if self.cells.has_pending() {
            self.drain_rounds();
        }
        self.settle();
    }

    /// [`Self::drain`] when something was dropped.
    #[inline(never)]
    fn drain_pending(&mut self) {
        self.drain_rounds();
    }

    /// Every round of a drain that found something dropped.
    #[inline(always)]
    fn drain_rounds(&mut self) {
        let release = self.capture.is_none();
        // Records pushed while a round is processed (another thread's drops,
        // or a pin's allocation released by its cell's reuse) are taken by
        // the next round, so a drain ends with the queue empty. A round
        // takes both lanes first (raw pins' records, then the cells, oldest
        // first) and frees them in that order; each cell is kept for reuse
        // as its record is read, before its slot is released, and nothing
        // below makes a handle or follows a slot to its cell.
        loop {
            // Raw pins' records (rare) land in `drained`, kept between rounds.
            self.cells.take_records(&mut self.drained);
            let mut cells = self.cells.take_cells();
            self.refresh_submitted();
            if !self.drained.is_empty() {
                self.apply_records(release);
            }
            while let Some(dropped) = self.cells.next_taken(&mut cells) {
                self.apply_drop(dropped, release);
            }
            if !self.cells.has_pending() {
                break;
            }
        }
    }

    /// The raw pins' records a round took, in order.
    #[cold]
    #[inline(never)]
    fn apply_records(&mut self, release: bool) {
        let mut batch = std::mem::take(&mut self.drained);
        for dropped in batch.drain(..) {
            self.apply_drop(dropped, release);
        }
        recycle(&mut batch);
        self.drained = batch;
    }

    /// One drained record: unpin, unraw, or free the slot's slice (a key
    /// whose generation moved on frees nothing).
    #[inline(always)]
    fn apply_drop(&mut self, dropped: Dropped, release: bool) {
        match dropped.kind {
            DropKind::Unpin => self.core.tables.unpin(dropped.key),
            DropKind::Unraw => self.core.tables.unraw(dropped.key),
            DropKind::Free => {
                if let Some(slice) = self.core.tables.slots.release(dropped.key) {
                    self.core.free_slice(&mut self.storage, slice, release);
                }
            }
        }
    }

    /// Take the shared submit counter's value, if any, as the stream's
    /// submit cursor, after a batch of drops was taken: every item those
    /// handles' users counted before dropping them is in it (the drop
    /// queue's push and take order the count before the load), so the
    /// slots they free are stamped late enough (`set_submit_cursor`).
    #[inline]
    fn refresh_submitted(&mut self) {
        if let Some(cursor) = &self.submit_cursor {
            let submitted = cursor.load(std::sync::atomic::Ordering::Acquire);
            let (old, completed) = self.core.tables.progress;
            if submitted > old {
                let (a, t, p) = self.core.arena_parts();
                a.set_progress(t, p, submitted, completed);
            }
        }
    }

    /// Flush the storage if pages were released since the last flush, so
    /// released pages are given back as soon as they empty.
    #[inline]
    pub(crate) fn settle(&mut self) {
        let retry = !self.core.arenas.unreleased_chunks.is_empty() && self.capture.is_none();
        if self.core.tables.stats.storage_frees != self.flushed_frees || retry {
            self.flush();
        }
    }

    #[inline(never)]
    pub(crate) fn flush(&mut self) {
        self.flushed_frees = self.core.tables.stats.storage_frees;
        if self.capture.is_none() {
            // Chunks whose release was refused (nothing is given back
            // while a stream records).
            (self.core.arenas).retry_chunk_releases(&mut self.core.tables, &mut self.storage);
        }
        if let Err(err) = self.storage.flush() {
            tracing::warn!(%err, "storage flush failed; pages stay queued and counted");
        }
    }

    /// Periodic cleanup of exclusive pools, gated by each pool's period.
    ///
    /// `age_due` is the earliest clock at which any pool's check is due, so
    /// the reservations between two checks (nearly all) compare one number
    /// instead of visiting every pool.
    #[inline]
    pub(crate) fn age_exclusive_pools(&mut self) {
        if self.capture.is_some() || self.core.tables.clock < self.age_due {
            return;
        }
        self.age_pools_due();
    }

    /// [`Self::age_exclusive_pools`] when a check may be due.
    #[inline(never)]
    fn age_pools_due(&mut self) {
        let clock = self.core.tables.clock;
        let mut released = false;
        let mut due = u64::MAX;
        for p in 0..self.core.pools.len() {
            let pool = &mut self.core.pools[p];
            let Some(period) = pool.dealloc_period else {
                continue;
            };
            if clock < pool.next_age_check {
                due = due.min(pool.next_age_check);
                continue;
            }
            pool.next_age_check = clock.saturating_add((period / 5).max(1));
            due = due.min(pool.next_age_check);
            let idle: Vec<u32> = pool
                .current
                .iter()
                .copied()
                .filter(|&pg| {
                    let page = &self.core.tables.pages[pg];
                    page.live == 0 && page.quarantined == 0 && clock - page.idle_since >= period
                })
                .collect();
            for page in idle {
                self.core.release_page(&mut self.storage, page);
                released = true;
            }
        }
        self.age_due = due;
        if released {
            self.flush();
        }
    }
}
