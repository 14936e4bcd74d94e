//! `RelocatingStreams`: a runtime's streams, as relocating one stream's
//! memory needs them.
//!
//! A relocation moves memory any stream may still read or write, so every
//! stream's work is done before a byte moves; and nothing moves while a
//! graph records, since the pages it touches keep their addresses until it
//! seals. The runtime supplies each step (the nine required methods); the
//! order they run in lives in the five provided methods, once, so no
//! runtime can get it wrong:
//!
//! ```text
//! reclaim              = refuse_while_recording? → relocate(Explicit) → cleanup_memory
//! relocate_when_wanted = relocation_need → (not recording) → reason(lazy bytes_allocated)
//!                        → finish → relocate_memory(reason)
//! relocate(r)          = (not recording, has_outdated) → finish → relocate_memory(r)
//! relocate_device(r)   = (not recording, device_has_outdated) → finish → relocate_device_memory(r)
//! ```

use crate::error::RelocationError;
use crate::reason::RelocationReason;
use crate::trigger::need::RelocationNeed;

/// A runtime's streams, as relocating one stream's memory needs them.
///
/// See the module docs for the order the provided methods hold. The trait
/// is dyn compatible.
pub trait RelocatingStreams {
    /// Whether any stream is recording a graph.
    fn recording(&mut self) -> bool;

    /// Whether a growth left pages behind in the relocating stream's memory:
    /// without any, a relocation has nothing to move and waits on nothing.
    fn has_outdated(&mut self) -> bool;

    /// Whether the relocating stream's memory wants a relocation, before
    /// the bytes the device holds are known.
    fn relocation_need(&mut self) -> RelocationNeed;

    /// The bytes every stream's memory holds from the device.
    fn bytes_allocated(&mut self) -> u64;

    /// Get every stream's queued and submitted work done, or leave it to the
    /// [`CopyQueue`](mem_pools::CopyQueue) to wait for before its first copy.
    fn finish(&mut self);

    /// Move what the relocating stream's memory holds on outdated pages.
    ///
    /// An implementation may also compact — empty sparse *current* pages
    /// into room other pages hold — for a reason whose room is
    /// [`Held`](crate::TargetRoom::Held) (explicit, memory pressure), after
    /// the outdated pages: [`DeviceRelocation`](crate::DeviceRelocation) does. Reserved
    /// bytes must not grow for those reasons either way.
    fn relocate_memory(&mut self, reason: RelocationReason);

    /// Whether a growth left pages behind in any stream's memory.
    fn device_has_outdated(&mut self) -> bool;

    /// Move what every stream's memory holds on outdated pages.
    fn relocate_device_memory(&mut self, reason: RelocationReason);

    /// Give back every page the relocating stream's memory holds and
    /// nothing needs. An implementation may first compact sparse current
    /// pages (never while a stream records), so a reclaim with nothing
    /// outdated still empties them: [`DeviceRelocation`](crate::DeviceRelocation) does.
    fn cleanup_memory(&mut self);

    /// Refuse while any stream records a graph: the pages a recording
    /// touches keep their addresses until it seals, and nothing may wait on
    /// the device under it.
    ///
    /// What [`RelocatingStreams::reclaim`] checks first, for a caller with
    /// work of its own to refuse before it.
    ///
    /// # Errors
    /// [`RelocationError::Recording`] (the `RelocatingStreams` protocol's `ServerError`) naming the
    /// recording when a stream records.
    fn refuse_while_recording(&mut self) -> Result<(), RelocationError> {
        if self.recording() {
            return Err(RelocationError::Recording { recording: 1 });
        }
        Ok(())
    }

    /// Give back everything the relocating stream's memory holds and nothing
    /// needs: what the outdated pages still hold moves first, while the
    /// current pages keep the room it moves into, then every page left
    /// empty goes back.
    ///
    /// # Errors
    /// Refused while any stream records a graph, see
    /// [`RelocatingStreams::refuse_while_recording`].
    fn reclaim(&mut self) -> Result<(), RelocationError> {
        self.refuse_while_recording()?;
        self.relocate(RelocationReason::Explicit);
        self.cleanup_memory();
        Ok(())
    }

    /// Relocate when the memory asks for it: while the device still has a
    /// page to spare, or before the pools run out of page sizes.
    fn relocate_when_wanted(&mut self) {
        let need = self.relocation_need();
        if need.is_nothing() || self.recording() {
            return;
        }
        let Some(reason) = need.reason(|| self.bytes_allocated()) else {
            return;
        };
        self.finish();
        self.relocate_memory(reason);
    }

    /// Relocate for `reason`, unless a graph records or nothing is outdated.
    fn relocate(&mut self, reason: RelocationReason) {
        if self.recording() || !self.has_outdated() {
            return;
        }
        self.finish();
        self.relocate_memory(reason);
    }

    /// Relocate every stream's memory for `reason`, unless a graph records
    /// or nothing is outdated anywhere.
    ///
    /// What a capture does before its warmup: a recording may touch memory
    /// any stream owns, and every page it touches is guarded for the
    /// graph's life, where no relocation can empty it.
    fn relocate_device(&mut self, reason: RelocationReason) {
        if self.recording() || !self.device_has_outdated() {
            return;
        }
        self.finish();
        self.relocate_device_memory(reason);
    }
}
