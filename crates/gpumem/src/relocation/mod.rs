//! Relocation across a device's streams: the facade as a runtime of
//! mem-relocate's shared steps.
//!
//! The steps — when to relocate, moving outdated pages, compacting sparse
//! ones for the held-room reasons, recording on each stream's trigger,
//! freeing cached memory before an out-of-memory retry — live once, in
//! [`mem_relocate::DeviceRelocation`], which the relocation tests' small runtime runs
//! too. The facade supplies only what is its own ([`DeviceMemories`]):
//!
//! - each stream's engine behind its lock, reached through
//!   `DeviceShared::run`, so a move's frees are folded into the statistics
//!   like any other call's, and the device's copy queue (host memcpy, or on
//!   CUDA a copy stream ordered after every stream by events);
//! - `finish`: synchronize every stream and mark its recorded uses
//!   complete, so memory held for them can be released;
//! - the memory held for other streams' unfinished work;
//! - `cleanup`, which gives nothing back while a graph records.
//!
//! Every device-wide move holds the device's `moving` lock, which is also
//! what marking a stream as recording takes, so a move and a capture never
//! interleave.

use mem_relocate::{
    DeviceRelocation, RelocatingStreams, RelocationError, StreamMemories, StreamParts,
};

use crate::backend::DeviceStorage;
use crate::error::{GpuMemError, Result};
use crate::shared::DeviceShared;
use crate::stats::waits::WaitSource;

mod calls;

pub(crate) use calls::{
    free_cached_memory, reclaim_device, reclaim_stream, relocate_device, relocate_stream,
    relocate_when_wanted, run,
};

/// A device's streams as mem-relocate's steps reach them, and why they
/// would be finished (counted as that source's device-wide wait).
pub(crate) struct DeviceMemories<'a>(&'a DeviceShared, WaitSource);

/// The shared steps over a device's streams, for one operation under the
/// device's `moving` lock.
pub(crate) type DeviceStreams<'a> = DeviceRelocation<DeviceMemories<'a>>;

impl<'a> DeviceMemories<'a> {
    /// Steps over `device`'s streams with `relocating` relocating, their
    /// finishes counted as `source`'s waits.
    pub(crate) fn steps(
        device: &'a DeviceShared,
        relocating: usize,
        source: WaitSource,
    ) -> Result<DeviceStreams<'a>> {
        Ok(DeviceRelocation::new(Self(device, source), relocating)?)
    }
}

impl StreamMemories for DeviceMemories<'_> {
    type Storage = DeviceStorage;
    type Error = GpuMemError;

    fn stream_count(&self) -> usize {
        self.0.streams.len()
    }

    fn with_stream<R>(
        &mut self,
        index: usize,
        f: impl FnOnce(StreamParts<'_, DeviceStorage>) -> R,
    ) -> R {
        let device = self.0;
        device.run(index, |st| {
            let mut queue = device.copy_queue();
            f(StreamParts {
                memory: &mut st.engine,
                trigger: &mut st.trigger,
                queue: &mut **queue,
            })
        })
    }

    fn recording_streams(&mut self) -> usize {
        self.0.streams.iter().filter(|s| s.is_recording()).count()
    }

    fn finish(&mut self) -> Result<()> {
        self.0.finish(self.1)
    }

    fn held_bytes(&mut self) -> u64 {
        self.0.streams.iter().map(|s| s.lock().held_bytes()).sum()
    }

    fn cleanup(&mut self, index: usize) {
        let device = self.0;
        device.run(index, |st| device.cleanup(st));
    }

    fn release_cached(&mut self, index: usize) {
        let device = self.0;
        device.run(index, |st| device.release_cached(st));
    }
}

/// Refuse while a stream records, naming it and the refused `operation`.
pub(crate) fn refuse(streams: &mut DeviceStreams<'_>, operation: &'static str) -> Result<()> {
    match streams.refuse_while_recording() {
        Ok(()) => Ok(()),
        Err(source @ RelocationError::Recording { .. }) => {
            let device = streams.memories().0;
            Err(GpuMemError::Recording {
                stream: device.recording_stream().unwrap_or_default(),
                operation,
                source,
            })
        }
        Err(err) => Err(err.into()),
    }
}
