//! Relocation across a device's streams, through mem-relocate's
//! `RelocatingStreams`.
//!
//! The order of steps lives once, in mem-relocate's provided methods
//! (refuse while recording → skip when nothing is outdated → finish every
//! stream's work → move); the facade supplies the nine steps for its
//! streams ([`DeviceStreams`]): `finish` synchronizes every stream and marks
//! its work complete, `bytes_allocated` sums every stream's storage, each
//! stream keeps a `RelocationTrigger` so an unchanged shape is never
//! replanned, and copies go through the device's copy queue (host memcpy, or
//! on CUDA a copy stream ordered after every stream by events).
//!
//! Which room a relocation may use follows its reason
//! ([`RelocationReason::room`]): an explicit one, a reclaim, or the
//! out-of-memory retry (memory pressure) never raise reserved memory; running
//! out of page sizes and preparing a capture may allocate current pages.
//! For the held-room reasons a relocation also compacts — empties sparse
//! current pages into room the stream already holds — after the outdated
//! pages, and the cleanup step of a reclaim does too (mem-relocate's rule,
//! `mem_relocate::compact`); the trigger asks for a pressure relocation
//! when nothing is outdated but the holes add up to a page.
//! Every device-wide move holds the device's `moving` lock, which is also
//! what marking a stream as recording takes, so a move and a capture never
//! interleave.

use mem_relocate::{RelocatingStreams, RelocationNeed, RelocationReason};
use mem_storage::ComputeStorage;

use crate::device::DeviceShared;
use crate::error::{GpuMemError, Result};

/// What a relocation did, summed over the streams it visited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelocationSummary {
    /// Allocations now living on current pages (moved off outdated pages
    /// or out of sparse current pages by a compaction).
    pub moved_slices: usize,
    /// Their bytes.
    pub moved_bytes: u64,
    /// Pages given back to the device (outdated pages emptied, and on a
    /// reclaim every empty page).
    pub pages_freed: u64,
    /// Their bytes.
    pub bytes_freed: u64,
}

/// A device's streams as mem-relocate sees them, with one relocating stream.
/// Built under the device's `moving` lock.
pub(crate) struct DeviceStreams<'a> {
    device: &'a DeviceShared,
    pub(crate) relocating: usize,
    summary: RelocationSummary,
    error: Option<GpuMemError>,
    /// Every stream's work was finished during this operation: a move
    /// after it needs no second device-wide wait.
    finished: bool,
}

impl<'a> DeviceStreams<'a> {
    pub(crate) fn new(device: &'a DeviceShared, relocating: usize) -> Self {
        Self {
            device,
            relocating,
            summary: RelocationSummary::default(),
            error: None,
            finished: false,
        }
    }

    /// Refuse while a stream records, naming it.
    pub(crate) fn refuse(&mut self, operation: &'static str) -> Result<()> {
        match self.refuse_while_recording() {
            Ok(()) => Ok(()),
            Err(source) => Err(GpuMemError::Recording {
                stream: self.device.recording_stream().unwrap_or(self.relocating),
                operation,
                source,
            }),
        }
    }

    /// What the steps did, or the first error a step hit.
    pub(crate) fn finish_result(self) -> Result<RelocationSummary> {
        match self.error {
            Some(err) => Err(err),
            None => Ok(self.summary),
        }
    }

    fn relocate_stream(&mut self, index: usize, reason: RelocationReason) {
        if self.error.is_some() {
            return;
        }
        let device = self.device;
        let result = device.run(index, |st| {
            let before = st.engine.stats();
            let mut queue = device.copy_queue();
            let result = mem_relocate::relocate_memory(&mut st.engine, reason, &mut **queue);
            let shape = st.engine.relocation_state().shape;
            st.trigger.record(result.as_ref().ok(), shape);
            let after = st.engine.stats();
            result.map(|outcome| (outcome, before, after))
        });
        match result {
            Ok((outcome, before, after)) => {
                self.summary.moved_slices += outcome.moved_slices;
                self.summary.moved_bytes += outcome.moved_bytes;
                self.summary.pages_freed += after.storage_frees - before.storage_frees;
                self.summary.bytes_freed +=
                    after.reserved_bytes.freed - before.reserved_bytes.freed;
            }
            Err(err) => self.error = Some(err.into()),
        }
        self.compact_stream(index, reason);
    }

    /// Compact stream `index`'s sparse current pages into room it already
    /// holds, for a reason whose room is held (explicit, memory pressure;
    /// nothing otherwise): mem-relocate's rule, see `mem_relocate::compact`.
    fn compact_stream(&mut self, index: usize, reason: RelocationReason) {
        if self.error.is_some() || reason.may_allocate() {
            return;
        }
        // A compaction moves bytes other streams' queued work may still
        // read (a `record_use`, a raw address): finish that work first, as
        // before any relocation — once per operation, and only when the
        // compaction will plan at all, so a dense device waits on nothing.
        let worthwhile = self.device.streams[index].lock().engine.compaction_state();
        if !self.finished && mem_relocate::compaction_worthwhile(&worthwhile) {
            self.finish();
            if self.error.is_some() {
                return;
            }
        }
        let device = self.device;
        let result = device.run(index, |st| {
            let before = st.engine.stats();
            let mut queue = device.copy_queue();
            let result = mem_relocate::compact_memory(&mut st.engine, reason, &mut **queue);
            let state = st.engine.compaction_state();
            st.trigger.record_compaction(result.as_ref().ok(), state);
            let after = st.engine.stats();
            result.map(|run| (run, before, after))
        });
        match result {
            Ok((run, before, after)) => {
                self.summary.moved_slices += run.outcome.moved_slices;
                self.summary.moved_bytes += run.outcome.moved_bytes;
                self.summary.pages_freed += after.storage_frees - before.storage_frees;
                self.summary.bytes_freed +=
                    after.reserved_bytes.freed - before.reserved_bytes.freed;
            }
            Err(err) => self.error = Some(err.into()),
        }
    }
}

impl RelocatingStreams for DeviceStreams<'_> {
    fn recording(&mut self) -> bool {
        self.device.recording_stream().is_some()
    }

    fn has_outdated(&mut self) -> bool {
        self.device.streams[self.relocating]
            .lock()
            .engine
            .has_outdated()
    }

    fn relocation_need(&mut self) -> RelocationNeed {
        let mut st = self.device.streams[self.relocating].lock();
        // Reports read only drained frees: without this, holes the caller
        // just made (and the reservation's own drain would see) are missed.
        st.engine.drain_drops();
        let state = st.engine.relocation_state();
        match st.trigger.need(&state) {
            RelocationNeed::Nothing => st
                .trigger
                .compaction_need(&st.engine.compaction_state(), state.next_page_size),
            need => need,
        }
    }

    fn bytes_allocated(&mut self) -> u64 {
        self.device
            .streams
            .iter()
            .map(|s| s.lock().engine.storage().bytes_allocated())
            .sum()
    }

    fn finish(&mut self) {
        match self.device.finish() {
            Ok(()) => self.finished = true,
            Err(err) => {
                self.error.get_or_insert(err);
            }
        }
    }

    fn relocate_memory(&mut self, reason: RelocationReason) {
        self.relocate_stream(self.relocating, reason);
    }

    fn device_has_outdated(&mut self) -> bool {
        self.device.any_outdated()
    }

    fn relocate_device_memory(&mut self, reason: RelocationReason) {
        for index in 0..self.device.streams.len() {
            self.relocate_stream(index, reason);
        }
    }

    fn cleanup_memory(&mut self) {
        if !self.recording() {
            self.compact_stream(self.relocating, RelocationReason::Explicit);
        }
        let device = self.device;
        let (frees, bytes) = device.run(self.relocating, |st| {
            let before = st.engine.stats();
            device.cleanup(st);
            let after = st.engine.stats();
            (
                after.storage_frees - before.storage_frees,
                after.reserved_bytes.freed - before.reserved_bytes.freed,
            )
        });
        self.summary.pages_freed += frees;
        self.summary.bytes_freed += bytes;
    }
}
