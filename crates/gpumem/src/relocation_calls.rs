//! The public relocation calls: [`Device::relocate`], [`Device::reclaim`]
//! and their one-stream forms on [`Stream`], each a sequence of
//! mem-relocate's provided steps over the device's streams under the device's
//! `moving` lock (see `relocation.rs` for the steps themselves).

use mem_relocate::{RelocatingStreams, RelocationReason};
use mem_storage::ComputeStorage;

use crate::device::{Device, DeviceShared};
use crate::error::Result;
use crate::relocation::{DeviceMemories, RelocationSummary, refuse};
use crate::stream::Stream;

impl DeviceShared {
    /// Get every stream's queued work done and mark it complete.
    pub(crate) fn finish(&self, source: crate::waits::WaitSource) -> Result<()> {
        self.waits.count(source);
        for stream in &self.streams {
            stream.lock().engine.storage().synchronize()?;
            stream.mark_all_complete();
        }
        Ok(())
    }
}

impl Device {
    /// Move what every stream holds on outdated pages onto current pages,
    /// with the room `reason` allows.
    ///
    /// # Errors
    /// [`GpuMemError::Recording`](crate::GpuMemError::Recording) while any stream records a graph (nothing
    /// moves); a copy error (see [`mem_relocate::RelocationError`] for what
    /// leaked).
    pub fn relocate(&self, reason: RelocationReason) -> Result<RelocationSummary> {
        let _moving = self.shared.moving();
        let mut streams = DeviceMemories::steps(&self.shared, 0)?;
        refuse(&mut streams, "relocation")?;
        streams.relocate_device(reason);
        streams.finish_result()
    }

    /// Give back everything the device's streams hold and nothing needs:
    /// outdated pages' live data moves first into room already held, sparse
    /// current pages are compacted into held room, then every empty page
    /// of every stream goes back. Reserved bytes never grow.
    pub fn reclaim(&self) -> Result<RelocationSummary> {
        let _moving = self.shared.moving();
        let mut streams = DeviceMemories::steps(&self.shared, 0)?;
        refuse(&mut streams, "reclaim")?;
        streams.relocate_device(RelocationReason::Explicit);
        for index in 0..self.shared.streams.len() {
            streams.set_relocating(index)?;
            streams.cleanup_memory();
        }
        streams.finish_result()
    }
}

impl Stream {
    /// Move what this stream holds on outdated pages (every stream's work is
    /// finished first; refused while any stream records).
    pub fn relocate(&self, reason: RelocationReason) -> Result<RelocationSummary> {
        let _moving = self.device.moving();
        let mut streams = DeviceMemories::steps(&self.device, self.index)?;
        refuse(&mut streams, "relocation")?;
        streams.relocate(reason);
        streams.finish_result()
    }

    /// Relocate this stream's memory if its trigger asks for it: the device
    /// has less than a page to spare, or its pools are about to run out of
    /// page sizes — and never again on a shape a relocation could not change.
    pub fn relocate_when_wanted(&self) -> Result<RelocationSummary> {
        let _moving = self.device.moving();
        let mut streams = DeviceMemories::steps(&self.device, self.index)?;
        streams.relocate_when_wanted();
        streams.finish_result()
    }

    /// mem-relocate's `reclaim` for this stream: relocate its outdated
    /// pages into held room, then give back every page it holds empty.
    pub fn reclaim(&self) -> Result<RelocationSummary> {
        let _moving = self.device.moving();
        let mut streams = DeviceMemories::steps(&self.device, self.index)?;
        refuse(&mut streams, "reclaim")?;
        RelocatingStreams::reclaim(&mut streams)?;
        streams.finish_result()
    }
}
