//! `StreamMemories`: what a runtime supplies for the multi-stream steps.
//!
//! Relocating across streams needs a handful of things only the runtime
//! knows: how to reach stream *i*'s memory (behind whatever lock it keeps),
//! whether a graph records, how to get every stream's work done, how much
//! memory it holds for other streams' unfinished work, and how it gives a
//! stream's empty pages back. Everything else — when to relocate, in which
//! order, what a compaction may do, what the trigger remembers, what a
//! relocation did — is the same for every runtime and lives once, in
//! [`DeviceRelocation`](crate::DeviceRelocation). A runtime (the gpumem
//! facade's `Device`) implements this trait and nothing more.

use mem_pools::{CopyQueue, MemoryManagement};
use mem_storage::ComputeStorage;

use crate::error::RelocationError;
use crate::trigger::RelocationTrigger;

/// One stream's memory as the steps use it: its pool engine, the trigger
/// that remembers what its relocations did, and the device's copy queue.
pub struct StreamParts<'a, S: ComputeStorage> {
    /// The stream's pool engine.
    pub memory: &'a mut MemoryManagement<S>,
    /// The stream's relocation trigger (its stalled-shape memo).
    pub trigger: &'a mut RelocationTrigger,
    /// Where moves' copies go (one queue for the whole device).
    pub queue: &'a mut dyn CopyQueue<S>,
}

/// A runtime's streams, as the shared steps reach them.
pub trait StreamMemories {
    /// The storage every stream's engine allocates from.
    type Storage: ComputeStorage;
    /// The runtime's error; a failed move arrives as a [`RelocationError`].
    type Error: From<RelocationError>;

    /// Streams on the device (indices `0..stream_count()`).
    fn stream_count(&self) -> usize;

    /// Run `f` on stream `index`'s parts. `index < stream_count()`, which
    /// [`DeviceRelocation`](crate::DeviceRelocation) checks before it asks.
    fn with_stream<R>(
        &mut self,
        index: usize,
        f: impl FnOnce(StreamParts<'_, Self::Storage>) -> R,
    ) -> R;

    /// How many streams record a graph right now.
    fn recording_streams(&mut self) -> usize;

    /// Get every stream's queued and submitted work done (what a move waits
    /// for before its first byte moves).
    ///
    /// # Errors
    /// The runtime's error when some stream's work could not be finished;
    /// nothing moves after it in this operation.
    fn finish(&mut self) -> Result<(), Self::Error>;

    /// Bytes freed by the caller but held until other streams' recorded work
    /// completes (0 for a runtime that frees at once).
    fn held_bytes(&mut self) -> u64 {
        0
    }

    /// Give back every empty page stream `index` holds. A runtime may refuse
    /// quietly (while a graph records, a free could wait under it).
    fn cleanup(&mut self, index: usize) {
        self.with_stream(index, |parts| parts.memory.cleanup(true));
    }

    /// Give back the physical memory stream `index` caches, as
    /// [`Self::cleanup`] does, but keep address ranges that hold none
    /// (`MemoryManagement::release_cached`): the out-of-memory retry's
    /// step, which would reserve a range it gave back again at once.
    fn release_cached(&mut self, index: usize) {
        self.with_stream(index, |parts| parts.memory.release_cached());
    }
}
