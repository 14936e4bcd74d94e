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
//! **Held allocations.** A stream keeps a clone of a handle when it must not
//! be reused yet: another stream recorded a use of it (`record_use`, like
//! PyTorch's `record_stream`), or poisoning is on and its free must be
//! observed. A held allocation is *released* once the user's holders are
//! gone (the clone is the only one left) and every recorded stream's
//! completed counter has passed the value that stream's submitted counter
//! had when the release was first observed — taking it then, rather than at
//! the moment of `record_use`, also covers work submitted after the record
//! and before the free, which is the guarantee `record_stream` gives.
//! Checking costs O(held) per engine call: nothing in normal mode, every
//! live allocation when poisoning.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use mem_pools::ManagedMemoryHandle;
use mem_relocate::RelocationTrigger;
use mem_storage::{ComputeStorage, StreamId};

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
    /// Launch-like operations submitted so far (the bind cursor).
    pub(crate) submitted: AtomicU64,
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
    pub(crate) fn new(id: StreamId, engine: StreamMemory, capacity: u64) -> Self {
        Self {
            id,
            manager: engine.id(),
            submitted: AtomicU64::new(0),
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

    pub(crate) fn lock(&self) -> MutexGuard<'_, StreamState> {
        // Every engine call leaves the engine consistent before it returns
        // (its contract: errors change nothing), so a panic elsewhere while
        // the lock was held cannot have left a half-made change.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn submitted(&self) -> u64 {
        self.submitted.load(Ordering::Acquire)
    }

    pub(crate) fn completed(&self) -> u64 {
        self.completed.load(Ordering::Acquire)
    }

    pub(crate) fn is_recording(&self) -> bool {
        self.recording.load(Ordering::Acquire)
    }

    /// Mark every submitted operation complete.
    pub(crate) fn mark_all_complete(&self) {
        self.completed
            .fetch_max(self.submitted.load(Ordering::Acquire), Ordering::AcqRel);
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

    /// Hold `handle` for a use by `stream` (merged with an existing hold).
    pub(crate) fn hold(&mut self, handle: &ManagedMemoryHandle, stream: Option<usize>) {
        let binding = handle.binding();
        let index = match self.held.iter().position(|h| h.handle.binding() == binding) {
            Some(i) => i,
            None => {
                self.held.push(Held {
                    handle: handle.clone(),
                    uses: Vec::new(),
                });
                self.held.len() - 1
            }
        };
        let entry = &mut self.held[index];
        if let Some(stream) = stream {
            match entry.uses.iter_mut().find(|u| u.stream == stream) {
                // A new use after the free was observed cannot happen (the
                // user still held a handle to record it), so restart the wait.
                Some(u) => u.until = None,
                None => entry.uses.push(Use {
                    stream,
                    until: None,
                }),
            }
        }
    }

    /// Hold a handle just reserved (so held nowhere yet): O(1), no search.
    pub(crate) fn hold_fresh(&mut self, handle: &ManagedMemoryHandle) {
        self.held.push(Held {
            handle: handle.clone(),
            uses: Vec::new(),
        });
    }

    /// Take out the hold on `handle`, if any (its clone with it).
    pub(crate) fn take_held(&mut self, handle: &ManagedMemoryHandle) -> Option<Held> {
        let binding = handle.binding();
        let index = self
            .held
            .iter()
            .position(|h| h.handle.binding() == binding)?;
        Some(self.held.swap_remove(index))
    }

    /// Take the recorded uses of `handle`'s current memory out of its hold,
    /// for a `bind` about to take that memory away (the uses stay with the
    /// memory, see [`Self::hold_kept`]). The hold itself stays only when
    /// `keep_hold` (poisoning observes every free).
    pub(crate) fn take_uses(&mut self, handle: &ManagedMemoryHandle, keep_hold: bool) -> Vec<Use> {
        let binding = handle.binding();
        let Some(index) = self.held.iter().position(|h| h.handle.binding() == binding) else {
            return Vec::new();
        };
        if keep_hold {
            return std::mem::take(&mut self.held[index].uses);
        }
        self.held.swap_remove(index).uses
    }

    /// Give `handle` back the uses [`Self::take_uses`] took (a refused bind).
    pub(crate) fn restore_uses(&mut self, handle: &ManagedMemoryHandle, uses: Vec<Use>) {
        for u in uses {
            self.hold(handle, Some(u.stream));
        }
    }

    /// Hold memory a `bind` took from a handle while other streams' recorded
    /// work may still use it: `kept` is its only holder, so the hold ends
    /// (and the memory is freed) once every recorded stream has completed
    /// what it had submitted when the bind happened (the bind is the free).
    pub(crate) fn hold_kept(
        &mut self,
        kept: ManagedMemoryHandle,
        uses: Vec<Use>,
        streams: &[StreamShared],
    ) {
        let uses = uses
            .into_iter()
            .map(|u| Use {
                stream: u.stream,
                until: streams.get(u.stream).map(StreamShared::submitted),
            })
            .collect();
        self.held.push(Held { handle: kept, uses });
    }

    /// Recorded uses of memory that `bind` handed to `assigned` now guard
    /// `assigned` (the memory is the same; its users' work still runs).
    pub(crate) fn transfer_uses(&mut self, assigned: &ManagedMemoryHandle, uses: Vec<Use>) {
        for u in uses {
            self.hold(assigned, Some(u.stream));
        }
    }

    /// Release every held allocation whose users are gone and whose recorded
    /// streams have completed their work; poison it first when asked.
    /// Nothing held (the common case) costs one comparison.
    #[inline]
    pub(crate) fn settle(&mut self, streams: &[StreamShared], poison: Option<u8>) {
        if !self.held.is_empty() {
            self.settle_held(streams, poison);
        }
    }

    fn settle_held(&mut self, streams: &[StreamShared], poison: Option<u8>) {
        let mut i = 0;
        while i < self.held.len() {
            let entry = &mut self.held[i];
            let mut ready = entry.handle.can_mut();
            if ready {
                for u in &mut entry.uses {
                    let Some(other) = streams.get(u.stream) else {
                        continue;
                    };
                    let until = *u.until.get_or_insert_with(|| other.submitted());
                    ready &= other.completed() >= until;
                }
            }
            if !ready {
                i += 1;
                continue;
            }
            let held = self.held.swap_remove(i);
            if let Some(byte) = poison {
                self.poison(&held.handle, byte);
            }
        }
    }

    /// Fill an allocation about to be freed with `byte`, so its next user
    /// (or a stale reader) sees the pattern instead of the old contents.
    fn poison(&mut self, handle: &ManagedMemoryHandle, byte: u8) {
        // A handle whose memory was handed to another by `bind` no longer
        // resolves: that memory is live elsewhere and must not be filled.
        let Ok(view) = self.engine.get_storage(handle.binding()) else {
            return;
        };
        if let Err(err) = self.engine.storage().fill(&view, byte) {
            tracing::warn!(%err, "poisoning a freed allocation failed; it is freed unpoisoned");
        }
    }

    /// Mark in `wait` (one flag a stream) every stream whose unfinished
    /// recorded work holds an allocation its user has dropped: the streams
    /// the out-of-memory retry waits for so the hold can end.
    pub(crate) fn mark_holding_streams(&self, streams: &[StreamShared], wait: &mut [bool]) {
        let dropped = self.held.iter().filter(|h| h.handle.can_mut());
        for u in dropped.flat_map(|h| &h.uses) {
            let (Some(other), Some(flag)) = (streams.get(u.stream), wait.get_mut(u.stream)) else {
                continue;
            };
            // A use whose end is not fixed yet ends at the stream's cursor
            // now (what `settle_held` would fix it at).
            let until = u.until.unwrap_or_else(|| other.submitted());
            *flag |= other.completed() < until;
        }
    }

    /// Bytes their users have dropped that are still held: waiting for
    /// other streams' recorded work, or for the next call to poison them.
    /// (A hold whose user still has the handle is that user's live memory.)
    pub(crate) fn held_bytes(&self) -> u64 {
        self.held
            .iter()
            .filter(|h| h.handle.can_mut())
            .map(|h| h.handle.size())
            .sum()
    }
}
