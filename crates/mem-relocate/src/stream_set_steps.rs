//! [`StreamSet`] as a runtime of the shared steps.
//!
//! The set supplies only what is its own ([`StreamMemories`]): its streams
//! and copy queue, its recording flags, and `finish` — synchronizing every
//! stream's storage. Every step of [`RelocatingStreams`] runs in
//! [`DeviceRelocation`], one value per operation (so an operation waits on
//! the device at most once), and what each did is added to the set's
//! [`RelocationLog`](crate::RelocationLog).
//!
//! [`StreamSet::reserve`] is the reservation path that fires the trigger:
//! relocate when wanted before every reservation (cheap: a stream with
//! nothing outdated answers at once), then follow [`ReserveRetry`] on a
//! refusal — relocate when the pool ran out of page sizes, free cached
//! memory when the storage refused — exactly as the gpumem facade does.

use mem_pools::{CopyQueue, IoError, ManagedMemoryHandle};
use mem_storage::{ComputeStorage, StorageError};

use crate::device_relocation::DeviceRelocation;
use crate::error::RelocationError;
use crate::memories::{StreamMemories, StreamParts};
use crate::need::RelocationNeed;
use crate::reason::RelocationReason;
use crate::retry::{ReserveRetry, RetryStep};
use crate::stream_set::{Stream, StreamSet};
use crate::streams::RelocatingStreams;

/// A stream set's streams and copy queue, borrowed for one operation.
pub(crate) struct SetMemories<'a, S: ComputeStorage> {
    streams: &'a mut [Stream<S>],
    queue: &'a mut (dyn CopyQueue<S> + Send),
}

impl<S: ComputeStorage> StreamMemories for SetMemories<'_, S> {
    type Storage = S;
    type Error = RelocationError;

    fn stream_count(&self) -> usize {
        self.streams.len()
    }

    fn with_stream<R>(&mut self, index: usize, f: impl FnOnce(StreamParts<'_, S>) -> R) -> R {
        let stream = &mut self.streams[index];
        f(StreamParts {
            memory: &mut stream.memory,
            trigger: &mut stream.trigger,
            queue: &mut *self.queue,
        })
    }

    fn recording_streams(&mut self) -> usize {
        self.streams.iter().filter(|s| s.recording).count()
    }

    fn finish(&mut self) -> Result<(), RelocationError> {
        let mut first: Option<StorageError> = None;
        for (index, s) in self.streams.iter_mut().enumerate() {
            if let Err(err) = s.memory.storage().synchronize() {
                tracing::warn!(stream = index, %err, "finishing a stream's work failed");
                first.get_or_insert(err);
            }
        }
        match first {
            None => Ok(()),
            Some(err) => Err(RelocationError::Engine(IoError::Storage(err))),
        }
    }
}

impl<S: ComputeStorage> StreamSet<S> {
    /// Run one operation of the shared steps, adding what it did to the log.
    fn steps<R>(&mut self, f: impl FnOnce(&mut DeviceRelocation<SetMemories<'_, S>>) -> R) -> R {
        let memories = SetMemories {
            streams: &mut self.streams,
            queue: &mut *self.queue,
        };
        let mut steps = DeviceRelocation::at(memories, self.relocating);
        let out = f(&mut steps);
        self.log.merge(steps.into_log());
        out
    }

    /// Reserve `size` bytes on `stream`, which becomes the relocating
    /// stream: relocate first if its memory wants it; on a refusal follow
    /// [`ReserveRetry`] (relocate when out of page sizes, free cached memory
    /// when the storage refused) and try again.
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
        let mut retry = ReserveRetry::new();
        loop {
            let err = match self.streams[stream].memory.reserve(size) {
                Ok(handle) => return Ok(handle),
                Err(err) => err,
            };
            match retry.next(&err) {
                RetryStep::RelocateForPageSizes => {
                    self.relocate(RelocationReason::PoolsOutOfPageSizes);
                }
                RetryStep::FreeCachedMemory => self.steps(|s| s.free_cached()),
                RetryStep::GiveUp => return Err(err.into()),
            }
        }
    }
}

/// Each provided operation runs whole on one [`DeviceRelocation`] (the
/// order is still the trait's: `DeviceRelocation` keeps every provided
/// method); the required steps, called alone, each make one.
impl<S: ComputeStorage> RelocatingStreams for StreamSet<S> {
    fn recording(&mut self) -> bool {
        self.streams.iter().any(|s| s.recording)
    }

    fn has_outdated(&mut self) -> bool {
        self.streams[self.relocating].memory.has_outdated()
    }

    fn relocation_need(&mut self) -> RelocationNeed {
        self.steps(|s| s.relocation_need())
    }

    fn bytes_allocated(&mut self) -> u64 {
        self.steps(|s| s.bytes_allocated())
    }

    fn finish(&mut self) {
        self.steps(|s| s.finish());
    }

    fn relocate_memory(&mut self, reason: RelocationReason) {
        self.steps(|s| s.relocate_memory(reason));
    }

    fn device_has_outdated(&mut self) -> bool {
        self.streams.iter().any(|s| s.memory.has_outdated())
    }

    fn relocate_device_memory(&mut self, reason: RelocationReason) {
        self.steps(|s| s.relocate_device_memory(reason));
    }

    fn cleanup_memory(&mut self) {
        self.steps(|s| s.cleanup_memory());
    }

    fn refuse_while_recording(&mut self) -> Result<(), RelocationError> {
        self.steps(|s| s.refuse_while_recording())
    }

    fn reclaim(&mut self) -> Result<(), RelocationError> {
        self.steps(|s| s.reclaim())
    }

    fn relocate_when_wanted(&mut self) {
        self.steps(|s| s.relocate_when_wanted());
    }

    fn relocate(&mut self, reason: RelocationReason) {
        self.steps(|s| s.relocate(reason));
    }

    fn relocate_device(&mut self, reason: RelocationReason) {
        self.steps(|s| s.relocate_device(reason));
    }
}
