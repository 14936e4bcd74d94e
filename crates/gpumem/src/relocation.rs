//! Relocation across a device's streams.
//!
//! The order of steps follows seed 002's `RelocatingStreams`: refuse while
//! any stream records a graph (the pages a recording touches keep their
//! addresses until it seals); skip when nothing is outdated; finish every
//! stream's work before a byte moves (any stream may read any memory); then
//! per stream plan → copy → commit on the pool engine, whose type-state
//! makes a dropped plan lossless and a failed wait a leak, never a free.
//!
//! Which room a relocation may use is the caller's [`TargetRoom`]:
//! [`TargetRoom::Held`] never raises reserved memory (an explicit
//! relocation, a reclaim, the out-of-memory retry), [`TargetRoom::MayAllocate`]
//! may allocate current-size pages (before a capture, so no recorded page is
//! outdated).

use mem_pools::{RelocationOutcome, StorageCopyQueue, TargetRoom};
use mem_storage::ComputeStorage;

use crate::backend::StreamMemory;
use crate::device::{Device, DeviceShared};
use crate::error::{GpuMemError, Result};
use crate::stream::Stream;

/// What a relocation did, summed over the streams it visited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelocationSummary {
    /// Allocations now living on current pages.
    pub moved_slices: usize,
    /// Their bytes.
    pub moved_bytes: u64,
    /// Pages given back to the device (outdated pages emptied, and on a
    /// reclaim every empty page).
    pub pages_freed: u64,
    /// Their bytes.
    pub bytes_freed: u64,
}

/// Plan → copy → commit on one engine; nothing when nothing is outdated.
pub(crate) fn relocate_engine(
    engine: &mut StreamMemory,
    room: TargetRoom,
) -> Result<RelocationOutcome> {
    if !engine.has_outdated() {
        return Ok(RelocationOutcome::default());
    }
    let plan = engine.plan_relocation(room);
    if plan.is_empty() {
        return Ok(RelocationOutcome::default());
    }
    let landed = engine.copy_relocation(plan, &mut StorageCopyQueue)?;
    Ok(engine.commit_relocation(landed)?)
}

impl DeviceShared {
    /// Whether any stream's pools hold outdated pages.
    pub(crate) fn any_outdated(&self) -> bool {
        self.streams.iter().any(|s| s.lock().engine.has_outdated())
    }

    /// Get every stream's queued work done.
    pub(crate) fn finish(&self) -> Result<()> {
        for stream in &self.streams {
            stream.lock().engine.storage().synchronize()?;
            stream.mark_all_complete();
        }
        Ok(())
    }

    /// Relocate the streams `which` (then give back empty pages when
    /// `reclaim`), with the `moving` lock already held by the caller.
    pub(crate) fn relocate_locked(
        &self,
        which: &[usize],
        room: TargetRoom,
        reclaim: bool,
    ) -> Result<RelocationSummary> {
        if let Some(stream) = self.recording_stream() {
            return Err(GpuMemError::Recording {
                stream,
                operation: "relocation",
            });
        }
        let mut summary = RelocationSummary::default();
        let outdated = which
            .iter()
            .any(|&i| self.streams[i].lock().engine.has_outdated());
        if outdated {
            self.finish()?;
        }
        for &index in which {
            self.run(index, |st| {
                let before = st.engine.stats();
                let outcome = relocate_engine(&mut st.engine, room)?;
                if reclaim {
                    st.engine.cleanup(true);
                }
                let after = st.engine.stats();
                summary.moved_slices += outcome.moved_slices;
                summary.moved_bytes += outcome.moved_bytes;
                summary.pages_freed += after.storage_frees - before.storage_frees;
                summary.bytes_freed += after.reserved_bytes.freed - before.reserved_bytes.freed;
                Ok::<_, GpuMemError>(())
            })?;
        }
        Ok(summary)
    }

    fn relocate(
        &self,
        which: &[usize],
        room: TargetRoom,
        reclaim: bool,
    ) -> Result<RelocationSummary> {
        let _moving = self.moving();
        self.relocate_locked(which, room, reclaim)
    }
}

impl Device {
    fn all(&self) -> Vec<usize> {
        (0..self.shared.streams.len()).collect()
    }

    /// Move what every stream holds on outdated pages onto current pages.
    ///
    /// # Errors
    /// [`GpuMemError::Recording`] while any stream records a graph (nothing
    /// moves); a copy error from the engine (see its variants for what
    /// leaked).
    pub fn relocate(&self, room: TargetRoom) -> Result<RelocationSummary> {
        self.shared.relocate(&self.all(), room, false)
    }

    /// Give back everything the device's streams hold and nothing needs:
    /// outdated pages' live data moves first into room already held, then
    /// every empty page goes back.
    pub fn reclaim(&self) -> Result<RelocationSummary> {
        self.shared.relocate(&self.all(), TargetRoom::Held, true)
    }
}

impl Stream {
    /// Move what this stream holds on outdated pages (every stream's work is
    /// finished first; refused while any stream records).
    pub fn relocate(&self, room: TargetRoom) -> Result<RelocationSummary> {
        self.device.relocate(&[self.index], room, false)
    }

    /// [`Device::reclaim`] for this stream's memory only.
    pub fn reclaim(&self) -> Result<RelocationSummary> {
        self.device.relocate(&[self.index], TargetRoom::Held, true)
    }
}
