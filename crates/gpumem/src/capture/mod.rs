//! Graph capture: mem-capture re-exported whole (the state machine,
//! captured graphs, CUDA and host backends), and the facade's capture on a
//! stream, delegated to it.
//!
//! mem-capture owns the sequence (`Capture`: prepare → begin → end, abort
//! from anywhere) and the graph side (`GraphBackend`, `CapturedGraph`). The
//! facade supplies what it needs from a device, [`StreamCapture`]: the
//! stream's pool (locked per call, so the warmup and recorded pass reserve
//! through the ordinary [`Stream`] API), the recording mark every other path
//! checks, relocation of every stream before the warmup, and the release of
//! held allocations before priming ends.
//!
//! The type-state over it ([`Stream::begin_capture`]) is in `steps.rs`.

use std::sync::atomic::Ordering;

use mem_relocate::{RelocatingStreams, RelocationReason};

use crate::relocation;
use crate::shared::Stream;

mod pool;
mod steps;

use pool::StreamPool;

#[doc(no_inline)]
pub use mem_capture::*;
pub use steps::{CaptureRecording, CaptureWarmup, DeviceGraph};

/// One stream of a device as mem-capture's `CaptureStreams`: use it with
/// `mem_capture::Capture` directly when the type-state does not fit.
#[derive(Debug)]
pub struct StreamCapture {
    pub(crate) stream: Stream,
    pool: StreamPool,
}

impl StreamCapture {
    pub(crate) fn new(stream: Stream) -> Self {
        let pool = StreamPool::new(stream.device.clone(), stream.index);
        Self { stream, pool }
    }

    /// The stream being captured.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }
}

impl CaptureStreams for StreamCapture {
    fn recording_streams(&mut self) -> usize {
        let streams = &self.stream.device.streams;
        streams.iter().filter(|s| s.is_recording()).count()
    }

    fn set_recording(&mut self, recording: bool) {
        // Under the moving lock: a relocation in flight finishes first, and
        // every later one sees the mark. (A launch open on this thread holds
        // it shared: no move is in flight then, and none begins before it.)
        let _moving = self.stream.device.moving.exclusive_unless_launching();
        self.stream
            .shared()
            .recording
            .store(recording, Ordering::Release);
    }

    fn relocate_device(&mut self) {
        let (device, index) = (&self.stream.device, self.stream.index);
        let result = relocation::run(
            device,
            index,
            ("relocation before a capture", true),
            |streams| {
                streams.relocate_device(RelocationReason::Capture);
                Ok(())
            },
        );
        if let Err(err) = result {
            tracing::warn!(%err, "relocation before the capture's warmup failed; capturing anyway");
        }
    }

    fn device_has_outdated(&mut self) -> bool {
        // One stream locked at a time, nothing settled: a look, not a call.
        let streams = &self.stream.device.streams;
        streams.iter().any(|s| s.lock().engine.has_outdated())
    }

    fn capture_pools(&mut self) -> Vec<&mut dyn mem_capture::CapturePool> {
        vec![&mut self.pool]
    }

    fn drain_deferred_frees(&mut self) {
        // Release held allocations whose users are done, so warmup's buffers
        // are back in the pool before priming ends.
        self.stream.device.run(self.stream.index, |_| ());
    }
}
