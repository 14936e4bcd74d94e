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

use crate::device::Device;
use crate::error::{GpuMemError, Result};

impl Device {
    /// Release the physical memory of every stream's arenas, keeping every
    /// address (see the module docs); [`SleepContents::Preserve`] copies
    /// what live allocations hold to host memory first. Returns what was
    /// released and kept, summed over the streams.
    ///
    /// # Errors
    /// [`GpuMemError::Recording`] while a stream records a graph (nothing
    /// released); a stream's work that cannot be finished; a storage
    /// refusal partway (what was released stays released, the device counts
    /// as asleep, and [`Device::wake`] maps it back);
    /// [`mem_pools::IoError::Asleep`] when already asleep.
    pub fn sleep(&self, contents: SleepContents) -> Result<SleepReport> {
        let shared = &self.shared;
        let _moving = shared.moving();
        if let Some(stream) = shared.recording_stream() {
            let recording = shared.streams.iter().filter(|s| s.is_recording()).count();
            return Err(GpuMemError::recording(stream, "sleep", recording));
        }
        shared.finish(crate::waits::WaitSource::Sleep)?;
        let mut total = SleepReport::default();
        for index in 0..shared.streams.len() {
            let report = shared.run(index, |st| st.engine.sleep(contents))?;
            total.released_bytes += report.released_bytes;
            total.preserved_bytes += report.preserved_bytes;
            total.kept_paged_bytes += report.kept_paged_bytes;
        }
        Ok(total)
    }

    /// Map fresh physical memory at every address live allocations had when
    /// the device went to sleep, and copy back what the sleep preserved.
    /// Returns the bytes mapped (0 when not asleep).
    ///
    /// # Errors
    /// A storage refusal (out of memory: the memory is still in use
    /// elsewhere): what was mapped stays mapped, the device stays asleep,
    /// and calling `wake` again maps the rest.
    pub fn wake(&self) -> Result<u64> {
        let shared = &self.shared;
        let _moving = shared.moving();
        let mut mapped = 0;
        for index in 0..shared.streams.len() {
            mapped += shared.run(index, |st| st.engine.wake())?;
        }
        Ok(mapped)
    }

    /// Whether any stream's arenas are asleep.
    pub fn is_asleep(&self) -> bool {
        self.shared
            .streams
            .iter()
            .any(|s| s.lock().engine.is_asleep())
    }
}
