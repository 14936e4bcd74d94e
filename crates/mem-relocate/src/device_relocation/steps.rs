//! The nine steps of [`RelocatingStreams`] for [`DeviceRelocation`]: each
//! reaches the runtime's streams through [`StreamMemories`] and leaves the
//! moves themselves to the parent module's `relocate_stream`,
//! `compact_stream` and `cleanup_stream`.

use mem_storage::ComputeStorage;

use super::DeviceRelocation;
use crate::device_relocation::memories::StreamMemories;
use crate::error::RelocationError;
use crate::reason::RelocationReason;
use crate::streams::RelocatingStreams;
use crate::trigger::need::RelocationNeed;

impl<M: StreamMemories> RelocatingStreams for DeviceRelocation<M> {
    fn recording(&mut self) -> bool {
        self.memories.recording_streams() > 0
    }

    fn has_outdated(&mut self) -> bool {
        let index = self.relocating;
        self.memories
            .with_stream(index, |p| p.memory.has_outdated())
    }

    fn relocation_need(&mut self) -> RelocationNeed {
        self.memories.with_stream(self.relocating, |p| {
            // Reports read only drained frees: without this, holes the
            // caller just made (and the reservation's own drain would see)
            // are missed.
            p.memory.drain_drops();
            let state = p.memory.relocation_state();
            match p.trigger.need(&state) {
                RelocationNeed::Nothing => p
                    .trigger
                    .compaction_need(&p.memory.compaction_state(), state.next_page_size),
                need => need,
            }
        })
    }

    fn bytes_allocated(&mut self) -> u64 {
        (0..self.memories.stream_count())
            .map(|i| {
                self.memories
                    .with_stream(i, |p| p.memory.storage().bytes_allocated())
            })
            .sum()
    }

    fn finish(&mut self) {
        match self.memories.finish() {
            Ok(()) => self.finished = true,
            Err(err) => {
                self.log.finish_failures += 1;
                self.error.get_or_insert(err);
            }
        }
    }

    fn relocate_memory(&mut self, reason: RelocationReason) {
        self.relocate_stream(self.relocating, reason);
    }

    fn device_has_outdated(&mut self) -> bool {
        (0..self.memories.stream_count())
            .any(|i| self.memories.with_stream(i, |p| p.memory.has_outdated()))
    }

    fn relocate_device_memory(&mut self, reason: RelocationReason) {
        for index in 0..self.memories.stream_count() {
            self.relocate_stream(index, reason);
        }
    }

    fn cleanup_memory(&mut self) {
        if !self.recording() {
            self.compact_stream(self.relocating, RelocationReason::Explicit);
        }
        self.cleanup_stream(self.relocating);
    }

    fn refuse_while_recording(&mut self) -> Result<(), RelocationError> {
        match self.memories.recording_streams() {
            0 => Ok(()),
            recording => Err(RelocationError::Recording { recording }),
        }
    }
}
