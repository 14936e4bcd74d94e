//! The relocation calls of `Device` and `Stream` (`relocate`, `reclaim`,
//! `relocate_when_wanted`) and the free-cached-memory step before an
//! out-of-memory retry: each a sequence of mem-relocate's provided steps
//! over the device's streams, under the device's `moving` lock.

use mem_relocate::{RelocatingStreams, RelocationReason, RelocationSummary};

use super::{DeviceMemories, DeviceStreams, refuse};
use crate::error::Result;
use crate::shared::DeviceShared;
use crate::stats::waits::WaitSource;

/// Run `steps` (named `operation`) over `device`'s streams with
/// `relocating` relocating, under the `moving` lock held exclusive; with
/// `while_recording` false, refuse first while a stream records a graph.
/// Returns what moved.
///
/// # Errors
/// `LaunchOpen` on a thread that holds a launch of the device; a
/// recording refusal; the steps' errors.
pub(crate) fn run(
    device: &DeviceShared,
    relocating: usize,
    operation: (&'static str, bool),
    steps: impl FnOnce(&mut DeviceStreams<'_>) -> Result<()>,
) -> Result<RelocationSummary> {
    run_as(device, relocating, operation, WaitSource::Relocation, steps)
}

/// As [`run`], its "finish every stream" counted as `source`'s
/// device-wide wait.
fn run_as(
    device: &DeviceShared,
    relocating: usize,
    (operation, while_recording): (&'static str, bool),
    source: WaitSource,
    steps: impl FnOnce(&mut DeviceStreams<'_>) -> Result<()>,
) -> Result<RelocationSummary> {
    let _moving = device.moving.exclusive(operation)?;
    let mut streams = DeviceMemories::steps(device, relocating, source)?;
    if !while_recording {
        refuse(&mut streams, operation)?;
    }
    steps(&mut streams)?;
    streams.finish_result()
}

/// Every stream's outdated pages moved with the room `reason` allows.
pub(crate) fn relocate_device(
    device: &DeviceShared,
    reason: RelocationReason,
) -> Result<RelocationSummary> {
    run(device, 0, ("relocation", false), |streams| {
        streams.relocate_device(reason);
        Ok(())
    })
}

/// Outdated pages moved into held room, sparse current pages compacted,
/// then every empty page of every stream given back.
pub(crate) fn reclaim_device(device: &DeviceShared) -> Result<RelocationSummary> {
    run(device, 0, ("reclaim", false), |streams| {
        streams.relocate_device(RelocationReason::Explicit);
        for index in 0..device.streams.len() {
            streams.set_relocating(index)?;
            streams.cleanup_memory();
        }
        Ok(())
    })
}

/// One stream's outdated pages moved with the room `reason` allows.
pub(crate) fn relocate_stream(
    device: &DeviceShared,
    index: usize,
    reason: RelocationReason,
) -> Result<RelocationSummary> {
    run(device, index, ("relocation", false), |streams| {
        streams.relocate(reason);
        Ok(())
    })
}

/// One stream's memory relocated if its trigger asks for it.
pub(crate) fn relocate_when_wanted(
    device: &DeviceShared,
    index: usize,
) -> Result<RelocationSummary> {
    run(device, index, ("relocation", true), |streams| {
        streams.relocate_when_wanted();
        Ok(())
    })
}

/// mem-relocate's `reclaim` for one stream.
pub(crate) fn reclaim_stream(device: &DeviceShared, index: usize) -> Result<RelocationSummary> {
    run(device, index, ("reclaim", false), |streams| {
        Ok(RelocatingStreams::reclaim(streams)?)
    })
}

/// Give back what every stream caches (PyTorch's free-cached-blocks step),
/// mem-relocate's `free_cached`: wait for the work memory is held for,
/// relocate outdated pages into held room (memory pressure) unless a graph
/// records, then return every empty page of every stream.
pub(crate) fn free_cached_memory(device: &DeviceShared) {
    let operation = ("freeing cached memory", true);
    let result = run_as(device, 0, operation, WaitSource::OomRetry, |streams| {
        streams.free_cached();
        Ok(())
    });
    if let Err(err) = result {
        tracing::warn!(%err, "waiting or relocating before the retry failed; cleaned up only");
    }
}
