//! `Stream`'s API for what moves or pins memory: relocation, reclaim and
//! graph capture (the machinery is in `relocation/` and `capture/`).

use mem_capture::{GraphBackend, HostGraphBackend};
use mem_relocate::{RelocationReason, RelocationSummary};

use crate::capture::{CaptureWarmup, StreamCapture};
use crate::error::Result;
use crate::relocation;
use crate::shared::Stream;

impl Stream {
    /// Move what this stream holds on outdated pages (every stream's work is
    /// finished first; refused while any stream records).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let summary = stream.relocate(RelocationReason::Explicit)?;
    /// assert_eq!(summary.moved_slices, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn relocate(&self, reason: RelocationReason) -> Result<RelocationSummary> {
        relocation::relocate_stream(&self.device, self.index, reason)
    }

    /// Relocate this stream's memory if its trigger asks for it: the device
    /// has less than a page to spare, or its pools are about to run out of
    /// page sizes (never again on a shape a relocation could not change).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// stream.relocate_when_wanted()?;
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn relocate_when_wanted(&self) -> Result<RelocationSummary> {
        relocation::relocate_when_wanted(&self.device, self.index)
    }

    /// Relocate this stream's outdated pages into held room, then give back
    /// every page it holds empty.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// drop(stream.reserve(MIB)?);
    /// stream.reclaim()?;
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn reclaim(&self) -> Result<RelocationSummary> {
        relocation::reclaim_stream(&self.device, self.index)
    }

    /// Begin a capture on this stream with the host graph backend.
    ///
    /// # Errors
    /// As [`Stream::begin_capture_with`].
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let warmup = stream.begin_capture()?;
    /// let w = warmup.stream(); // the warmup pass reserves what recording will
    /// drop((w.reserve(KIB)?, w.reserve(KIB)?));
    /// let mut recording = warmup.start_recording()?;
    /// let (a, b) = (recording.stream().reserve(KIB)?, recording.stream().reserve(KIB)?);
    /// let (src, dst) = (stream.view(&a)?, stream.view(&b)?);
    /// recording.recorder().copy(0, src, dst)?; // the pass's "kernel"
    /// let mut graph = recording.end()?;
    /// graph.replay()?;
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn begin_capture(&self) -> Result<CaptureWarmup<HostGraphBackend>> {
        self.begin_capture_with(HostGraphBackend::new())
    }

    /// Begin a capture with `backend`: every stream's outdated memory is
    /// relocated; the stream's pool opens its window and the stream is
    /// marked recording. Beside another stream's recording it begins only
    /// when nothing is outdated (always on arenas), and skips the
    /// relocation, which would have nothing to move.
    ///
    /// # Errors
    /// `CaptureError::Streams(RelocationError::Recording { .. })` while
    /// another stream records and some stream's paged memory is outdated,
    /// before anything changes.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let backend = gpumem::capture::HostGraphBackend::new();
    /// let warmup = stream.begin_capture_with(backend)?;
    /// warmup.abort();
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn begin_capture_with<B: GraphBackend>(&self, backend: B) -> Result<CaptureWarmup<B>> {
        CaptureWarmup::begin(self.capture_streams(), backend)
    }

    /// This stream as mem-capture's `CaptureStreams`, for driving
    /// `mem_capture::Capture` directly.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(stream.capture_streams().stream().index(), 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn capture_streams(&self) -> StreamCapture {
        StreamCapture::new(self.clone())
    }
}
