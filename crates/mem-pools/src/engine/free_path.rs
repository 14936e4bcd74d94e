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
use crate::handles::keys::DropKind;

impl<S: ComputeStorage> MemoryManagement<S> {
    /// Free every slot whose last handle dropped: O(1) each, no scan.
    pub(crate) fn drain(&mut self) {
        if !self.cells.has_pending() {
            // Nothing dropped since the last call (most reservations of a
            // burst): no batch to take out and put back.
            self.settle();
            return;
        }
        let release = self.capture.is_none();
        let mut batch = std::mem::take(&mut self.drained);
        // Records pushed while a batch is processed (another thread's drops,
        // or a pin's allocation released by its cell's reuse) are taken by
        // the next round, so a drain ends with the queue empty. The batch's
        // cells are already kept for reuse: nothing below makes a handle or
        // follows a slot to its cell before their slots are released.
        while self.cells.has_pending() {
            self.cells.take(&mut batch);
            self.refresh_submitted();
            for dropped in batch.drain(..) {
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
            recycle(&mut batch);
        }
        self.drained = batch;
        self.settle();
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
    pub(crate) fn settle(&mut self) {
        let retry = !self.core.arenas.unreleased_chunks.is_empty() && self.capture.is_none();
        if self.core.tables.stats.storage_frees != self.flushed_frees || retry {
            self.flush();
        }
    }

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
    pub(crate) fn age_exclusive_pools(&mut self) {
        if self.capture.is_some() {
            return;
        }
        let clock = self.core.tables.clock;
        let mut released = false;
        for p in 0..self.core.pools.len() {
            let pool = &mut self.core.pools[p];
            let Some(period) = pool.dealloc_period else {
                continue;
            };
            if clock < pool.next_age_check {
                continue;
            }
            pool.next_age_check = clock.saturating_add((period / 5).max(1));
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
        if released {
            self.flush();
        }
    }
}
