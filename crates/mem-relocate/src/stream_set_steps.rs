//! The nine steps [`RelocatingStreams`] asks of a runtime, for [`StreamSet`].
//!
//! - `finish` synchronizes every stream's storage, so every stream's queued
//!   work is done before the copy queue's own wait;
//! - `bytes_allocated` sums every stream's storage (device pressure is the
//!   whole device's, not one stream's);
//! - a relocation of one stream's memory updates that stream's trigger: a
//!   relocation that moved nothing (or failed) stalls it on the shape it
//!   left, one that moved something clears it;
//! - `relocate_memory(reason)` moves what outdated pages hold first, then,
//!   for a reason whose room is held (explicit, memory pressure), compacts
//!   sparse current pages into the room the other pages hold
//!   ([`crate::compact`]): reserved bytes never grow on either step;
//! - `relocation_need` also asks for a pressure relocation when nothing is
//!   outdated but current pages hold a page's worth of holes (and the
//!   compaction memo has not settled on the same page counts); it drains
//!   the stream's drop queue first, since the pools' reports only see
//!   drained frees;
//! - `cleanup_memory` compacts too unless a stream records (its copy queue
//!   waits on the device before its first copy), then gives back every
//!   empty page: a reclaim with nothing outdated still empties sparse pages;
//! - `refuse_while_recording` is the trait's own, but this set knows how
//!   many streams record, so its error carries that count.
//!
//! [`StreamSet::reserve`] is the reservation path that fires the trigger:
//! relocate when wanted before every reservation (cheap: a stream with
//! nothing outdated answers at once), and when a pool has run out of page
//! sizes, relocate for that reason and retry once.

use mem_pools::{IoError, ManagedMemoryHandle};
use mem_storage::ComputeStorage;

use crate::compact;
use crate::error::RelocationError;
use crate::execute;
use crate::need::RelocationNeed;
use crate::reason::RelocationReason;
use crate::stream_set::StreamSet;
use crate::streams::RelocatingStreams;

impl<S: ComputeStorage> StreamSet<S> {
    /// Reserve `size` bytes on `stream`, which becomes the relocating
    /// stream: relocate first if its memory wants it, and if the pool is out
    /// of page sizes, relocate for that reason and retry once.
    ///
    /// # Errors
    /// [`RelocationError::UnknownStream`], or the engine's refusal as
    /// [`RelocationError::Engine`] (nothing was reserved).
    pub fn reserve(
        &mut self,
        stream: usize,
        size: u64,
    ) -> Result<ManagedMemoryHandle, RelocationError> {
        self.set_relocating(stream)?;
        self.relocate_when_wanted();
        match self.streams[stream].memory.reserve(size) {
            Err(IoError::PageSizesExhausted { .. }) => {
                self.relocate(RelocationReason::PoolsOutOfPageSizes);
                Ok(self.streams[stream].memory.reserve(size)?)
            }
            other => Ok(other?),
        }
    }

    /// Relocate stream `index`'s memory once (what outdated pages hold,
    /// then a compaction for a held-room reason) and record what happened.
    fn relocate_stream(&mut self, index: usize, reason: RelocationReason) {
        if self.streams[index].memory.has_outdated() {
            self.relocate_outdated(index, reason);
        }
        self.compact_stream(index, reason);
    }

    /// Compact stream `index`'s memory for `reason` (nothing for a reason
    /// that may allocate) and record what happened.
    fn compact_stream(&mut self, index: usize, reason: RelocationReason) {
        if reason.may_allocate() {
            return;
        }
        let stream = &mut self.streams[index];
        let result = compact::compact_memory(&mut stream.memory, reason, &mut *self.queue);
        let state = stream.memory.compaction_state();
        stream
            .trigger
            .record_compaction(result.as_ref().ok(), state);
        match &result {
            Ok(run) if run.rounds > 0 => tracing::debug!(
                stream = index,
                %reason,
                moved = run.outcome.moved_slices,
                pages_freed = run.outcome.pages_freed,
                "compacted"
            ),
            Ok(_) => {}
            Err(err) => tracing::warn!(stream = index, %reason, %err, "compaction failed"),
        }
        self.log.record_compaction(&result);
    }

    /// Move what stream `index`'s outdated pages hold and record it.
    fn relocate_outdated(&mut self, index: usize, reason: RelocationReason) {
        let stream = &mut self.streams[index];
        let result = execute::relocate_memory(&mut stream.memory, reason, &mut *self.queue);
        let shape = stream.memory.relocation_state().shape;
        stream.trigger.record(result.as_ref().ok(), shape);
        match &result {
            Ok(o) => tracing::debug!(
                stream = index,
                %reason,
                moved = o.moved_slices,
                pages_freed = o.pages_freed,
                "relocated"
            ),
            Err(err) => tracing::warn!(stream = index, %reason, %err, "relocation failed"),
        }
        self.log.record(reason, &result);
    }
}

impl<S: ComputeStorage> RelocatingStreams for StreamSet<S> {
    fn recording(&mut self) -> bool {
        self.streams.iter().any(|s| s.recording)
    }

    fn has_outdated(&mut self) -> bool {
        self.streams[self.relocating].memory.has_outdated()
    }

    fn relocation_need(&mut self) -> RelocationNeed {
        let s = &mut self.streams[self.relocating];
        // Reports read only drained frees: without this, holes the caller
        // just made (and the reservation's own drain would see) are missed.
        s.memory.drain_drops();
        let state = s.memory.relocation_state();
        match s.trigger.need(&state) {
            RelocationNeed::Nothing => s
                .trigger
                .compaction_need(&s.memory.compaction_state(), state.next_page_size),
            need => need,
        }
    }

    fn bytes_allocated(&mut self) -> u64 {
        self.streams
            .iter_mut()
            .map(|s| s.memory.storage().bytes_allocated())
            .sum()
    }

    fn finish(&mut self) {
        let mut failed = false;
        for (index, s) in self.streams.iter_mut().enumerate() {
            if let Err(err) = s.memory.storage().synchronize() {
                // The copy queue waits for the device again before its first
                // copy; a broken device fails there and nothing moves.
                tracing::warn!(stream = index, %err, "finishing a stream's work failed");
                failed = true;
            }
        }
        if failed {
            self.log.finish_failures += 1;
        }
    }

    fn relocate_memory(&mut self, reason: RelocationReason) {
        self.relocate_stream(self.relocating, reason);
    }

    fn device_has_outdated(&mut self) -> bool {
        self.streams.iter().any(|s| s.memory.has_outdated())
    }

    fn relocate_device_memory(&mut self, reason: RelocationReason) {
        for index in 0..self.streams.len() {
            if self.streams[index].memory.has_outdated() {
                self.relocate_stream(index, reason);
            }
        }
    }

    fn cleanup_memory(&mut self) {
        if !self.recording() {
            self.compact_stream(self.relocating, RelocationReason::Explicit);
        }
        self.streams[self.relocating].memory.cleanup(true);
    }

    fn refuse_while_recording(&mut self) -> Result<(), RelocationError> {
        match self.recording_streams().len() {
            0 => Ok(()),
            recording => Err(RelocationError::Recording { recording }),
        }
    }
}
