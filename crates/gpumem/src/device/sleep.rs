//! `Device::sleep` / `Device::wake`: hand the device's memory to someone
//! else and take it back, every address kept.
//!
//! What RL training loops and model swapping need (vLLM builds its sleep
//! mode on PyTorch with its own allocator): between phases, release the
//! physical memory of every arena, optionally copying what live
//! allocations hold to host memory first; later map fresh memory at the
//! same addresses and copy it back. Handles, raw pointers and captured
//! graphs name addresses, so all of them stay valid across the pair.
//! Paged pools keep their pages (their pages are their addresses); a device
//! without arenas releases nothing.
//!
//! Every stream's work is finished before a byte is unmapped, and nothing
//! sleeps while a graph records. While asleep a reservation is
//! `GpuMemError::Pool(IoError::Asleep)`.

use mem_pools::{SleepContents, SleepReport};

use crate::error::{GpuMemError, Result};
use crate::shared::DeviceShared;

/// [`crate::Device::sleep`].
pub(crate) fn sleep(shared: &DeviceShared, contents: SleepContents) -> Result<SleepReport> {
    let _moving = shared.moving.exclusive("sleep")?;
    if let Some(stream) = shared.recording_stream() {
        let recording = shared.streams.iter().filter(|s| s.is_recording()).count();
        return Err(GpuMemError::recording(stream, "sleep", recording));
    }
    shared.finish(crate::stats::waits::WaitSource::Sleep)?;
    let mut total = SleepReport::default();
    for index in 0..shared.streams.len() {
        let report = shared.run(index, |st| st.engine.sleep(contents))?;
        total.released_bytes += report.released_bytes;
        total.preserved_bytes += report.preserved_bytes;
        total.kept_paged_bytes += report.kept_paged_bytes;
    }
    Ok(total)
}

/// [`crate::Device::wake`].
pub(crate) fn wake(shared: &DeviceShared) -> Result<u64> {
    let _moving = shared.moving.exclusive("wake")?;
    let mut mapped = 0;
    for index in 0..shared.streams.len() {
        mapped += shared.run(index, |st| st.engine.wake())?;
    }
    Ok(mapped)
}

/// [`crate::Device::is_asleep`].
pub(crate) fn is_asleep(shared: &DeviceShared) -> bool {
    shared.streams.iter().any(|s| s.lock().engine.is_asleep())
}
