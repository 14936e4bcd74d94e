//! What a stream holds: its pool engine, its operation counters, and the
//! allocations it keeps alive on others' behalf.
//!
//! Locking: each stream's engine sits behind its own mutex, and the
//! operation counters and the recording flag are atomics beside it, so one
//! stream reads another's progress without locking it. A call never holds
//! two stream locks at once; device-wide work (relocation, reclaim, capture
//! begin) takes the device's `moving` lock first and then visits the streams
//! one at a time. That order cannot deadlock.
//!
//! What a stream does with the allocations it holds on others' behalf is
//! `held.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, MutexGuard};

use mem_pools::ManagedMemoryHandle;
use mem_relocate::RelocationTrigger;
use mem_storage::StreamId;

use crate::backend::StreamMemory;
use crate::stats::device_stats::{LEVELS, Levels, pool_levels};
use crate::stats::{MemoryStats, StreamTally};

/// One recorded use of a held allocation by another stream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Use {
    pub(crate) stream: usize,
    /// That stream's submitted counter when the user's free was observed.
    pub(crate) until: Option<u64>,
}

/// An allocation a stream keeps alive until it may be reused.
#[derive(Debug)]
pub(crate) struct Held {
    pub(crate) handle: ManagedMemoryHandle,
    pub(crate) uses: Vec<Use>,
}

/// A stream's engine and the allocations it holds.
#[derive(Debug)]
pub(crate) struct StreamState {
    pub(crate) engine: StreamMemory,
    pub(crate) held: Vec<Held>,
    /// What the stream's statistics add to the engine's counters.
    pub(crate) tally: StreamTally,
    /// When this stream's memory wants a relocation (and the stalled-shape memo).
    pub(crate) trigger: RelocationTrigger,
}

/// A stream as the device keeps it.
#[derive(Debug)]
pub(crate) struct StreamShared {
    pub(crate) id: StreamId,
    /// The id of this stream's engine (carried by its handles).
    pub(crate) manager: u64,
    /// Launch-like operations submitted so far (the bind cursor); shared
    /// with the engine, which stamps the slots of handles dropped on other
    /// threads with it (`MemoryManagement::set_submit_cursor`).
    pub(crate) submitted: Arc<AtomicU64>,
    /// Operations known complete.
    pub(crate) completed: AtomicU64,
    /// A graph capture is open on this stream.
    pub(crate) recording: AtomicBool,
    /// The statistics' current levels, published after each call for the
    /// device's peak (`device_stats.rs`).
    pub(crate) levels: Levels,
    pub(crate) state: Mutex<StreamState>,
}

impl StreamShared {
    pub(crate) fn new(id: StreamId, mut engine: StreamMemory, capacity: u64) -> Self {
        let submitted = Arc::new(AtomicU64::new(0));
        engine.set_submit_cursor(submitted.clone());
        Self {
            id,
            manager: engine.id(),
            submitted,
            completed: AtomicU64::new(0),
            recording: AtomicBool::new(false),
            levels: Levels::default(),
            state: Mutex::new(StreamState {
                engine,
                held: Vec::new(),
                tally: StreamTally::default(),
                trigger: RelocationTrigger::new(Some(capacity)),
            }),
        }
    }

    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, StreamState> {
        // A lock that does not poison: every engine call leaves the engine
        // consistent before it returns (its contract: errors change
        // nothing), so a panic elsewhere while the lock was held cannot have
        // left a half-made change, and a poisoned std lock was taken anyway.
        // Not poisoning spares every call the two panic-count checks.
        self.state.lock()
    }

    #[inline]
    pub(crate) fn submitted(&self) -> u64 {
        self.submitted.load(Ordering::Acquire)
    }

    #[inline]
    pub(crate) fn completed(&self) -> u64 {
        self.completed.load(Ordering::Acquire)
    }

    #[inline]
    pub(crate) fn is_recording(&self) -> bool {
        self.recording.load(Ordering::Acquire)
    }

    /// Run `synchronize` (a wait for this stream's queued work), then mark
    /// complete every operation counted before it began.
    ///
    /// Why the count is read first: a runtime enqueues its work and then
    /// counts it (`LaunchGuard::submit`), so an operation counted before
    /// the wait began was queued before it, and the wait covered it. One
    /// counted while the wait ran, by another thread, may have been queued
    /// after the wait began and may still run; marking it complete would
    /// let its memory be reused or unmapped under it.
    pub(crate) fn synchronized<E>(
        &self,
        synchronize: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        let before = self.submitted();
        synchronize()?;
        self.completed.fetch_max(before, Ordering::AcqRel);
        Ok(())
    }
}

impl StreamState {
    /// The stream's statistics, from the engine's counters now (O(pools)
    /// for the largest free block and the cached chunk bytes).
    pub(crate) fn stats_now(&mut self) -> MemoryStats {
        let engine = self.engine.stats();
        self.tally.stats(&engine)
    }

    /// Lower the stream's peaks to their current levels.
    pub(crate) fn reset_peaks(&mut self) {
        self.tally.reset_peaks(self.engine.counters());
        self.engine.reset_peaks();
    }

    /// Start a call on a device with several streams: keep the stream's
    /// peaks, then reset the engine's so that after the call they are the
    /// call's own. Returns the levels the call starts from.
    pub(crate) fn begin_shared_call(&mut self) -> [u64; LEVELS] {
        let counters = self.engine.counters();
        self.tally.keep_peaks(counters);
        let start = pool_levels(counters);
        self.engine.reset_peaks();
        start
    }
}

#[cfg(test)]
#[path = "stream_state_tests.rs"]
mod tests;
