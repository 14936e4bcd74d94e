//! The drop queue: where a handle dropped on any thread leaves its free for
//! the engine.
//!
//! A dropped handle (or pin, or raw pin) pushes one [`Dropped`] record; the
//! engine takes every pending record at its next `&mut self` call and frees
//! (or unpins) each in O(1). Nothing scans.
//!
//! **Why a mutex-guarded `Vec` and not a lock-free queue.** The common case
//! is one thread dropping what the engine's own thread reserved, with at
//! most a few records between drains. There a lock-free `SegQueue` paid a
//! CAS per push *and* per pop, plus a block allocation every 31 records;
//! here a push is one uncontended lock, a `Vec` push and an unlock, and the
//! engine takes the whole batch with one lock and a swap of two buffers
//! that keep their capacity, so a steady state allocates nothing. The
//! critical sections are O(1) (a push, or a swap), so a dropping thread
//! waits at most that long. Measured in `docs/benchmarks.md`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use crate::handle::Dropped;

/// Capacity the engine's drain buffer keeps between drains; a burst larger
/// than this (dropping a million handles at once) gives its memory back.
const KEPT_CAPACITY: usize = 4096;

/// Records of ended holders, waiting for the engine's next call.
#[derive(Debug, Default)]
pub(crate) struct DropQueue {
    pending: Mutex<Vec<Dropped>>,
    /// Whether `pending` may hold records: written only under the lock,
    /// read without it, so a drain with nothing queued (most reservations)
    /// costs one load and no lock. A push that happened before the drain
    /// (same thread, or synchronised with it) is always seen.
    any: AtomicBool,
}

impl DropQueue {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Queue one record (any thread). O(1) amortised.
    pub(crate) fn push(&self, dropped: Dropped) {
        // A poisoned lock only means a pusher panicked mid-push (a `Vec`
        // push cannot leave it half-written), so the records are intact.
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.push(dropped);
        self.any.store(true, Ordering::Release);
    }

    /// Whether records may be waiting (a hint; exact for pushes that
    /// happened before this call).
    pub(crate) fn has_pending(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Move every pending record into `batch` (which must be empty), leaving
    /// `batch`'s old buffer behind for the next pushes: one lock, a swap.
    pub(crate) fn take_into(&self, batch: &mut Vec<Dropped>) {
        debug_assert!(batch.is_empty());
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        self.any.store(false, Ordering::Relaxed);
        std::mem::swap(&mut *pending, batch);
    }
}

/// Empty a processed batch, keeping a bounded buffer for the next one.
pub(crate) fn recycle(batch: &mut Vec<Dropped>) {
    batch.clear();
    if batch.capacity() > KEPT_CAPACITY {
        batch.shrink_to(KEPT_CAPACITY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handle::{DropKind, SlotKey};

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
        let queue = std::sync::Arc::new(DropQueue::new());
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let queue = queue.clone();
                std::thread::spawn(move || (0..1000).for_each(|i| queue.push(record(t * 1000 + i))))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let mut batch = Vec::new();
        queue.take_into(&mut batch);
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
        queue.take_into(&mut batch);
        assert!(batch.is_empty(), "a taken record is never taken again");
    }

    #[test]
    fn a_burst_gives_its_memory_back_after_the_drain() {
        let queue = DropQueue::new();
        (0..10 * KEPT_CAPACITY as u32).for_each(|i| queue.push(record(i)));
        let mut batch = Vec::new();
        queue.take_into(&mut batch);
        assert_eq!(batch.len(), 10 * KEPT_CAPACITY);
        recycle(&mut batch);
        assert!(batch.is_empty() && batch.capacity() <= KEPT_CAPACITY);
        queue.push(record(1));
        assert!(queue.has_pending());
        let mut next = Vec::new();
        queue.take_into(&mut next);
        assert_eq!(next.len(), 1);
    }
}
