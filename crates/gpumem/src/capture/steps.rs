//! The capture type-state over mem-capture's `Capture`.
//!
//! [`Stream::begin_capture`] → [`CaptureWarmup`] → `start_recording` →
//! [`CaptureRecording`] → `end` → [`DeviceGraph`]: each step consumes the
//! previous one, so the steps cannot be called out of order, and dropping a
//! warmup or a recording aborts the capture (mem-capture's `abort`: every
//! pool leaves capture mode, the stream is unmarked, nothing stays in stream
//! capture). The host graph backend is the default;
//! [`Stream::begin_capture_with`] takes any backend, CUDA included.

use mem_capture::{Capture, CapturedGraph, GraphBackend, HostGraphBackend};

use super::StreamCapture;
use crate::error::{GpuMemError, Result};
use crate::shared::Stream;

struct Open<B> {
    capture: Capture,
    streams: StreamCapture,
    backend: B,
}

impl<B: GraphBackend> Open<B> {
    fn abort(mut self) {
        self.capture.abort(&mut self.streams, &mut self.backend);
    }
}

/// A capture in its warmup pass. Drop to abort.
#[must_use = "dropping the warmup aborts the capture"]
pub struct CaptureWarmup<B: GraphBackend = HostGraphBackend> {
    open: Option<Open<B>>,
}

/// A capture whose recorded pass is running. Drop to abort.
#[must_use = "dropping the recording aborts the capture"]
pub struct CaptureRecording<B: GraphBackend = HostGraphBackend> {
    open: Option<Open<B>>,
}

/// A sealed graph with the memory it replays against pinned, its backend
/// and its stream: replay it as often as needed; drop it to release the memory.
pub struct DeviceGraph<B: GraphBackend = HostGraphBackend> {
    graph: CapturedGraph<B::Graph>,
    streams: StreamCapture,
    backend: B,
}

impl<B: GraphBackend> CaptureWarmup<B> {
    /// [`Stream::begin_capture_with`] on `streams`' stream.
    pub(crate) fn begin(mut streams: StreamCapture, backend: B) -> Result<Self> {
        if streams.stream.device.moving.launching_here() {
            let operation = "begin_capture";
            return Err(GpuMemError::LaunchOpen { operation });
        }
        let mut capture = Capture::new();
        {
            // A capture gate poisoned by a panic guards no state of its own.
            let device = streams.stream.device.clone();
            let _gate = device
                .capture_gate
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            capture.prepare(&mut streams)?;
        }
        Ok(CaptureWarmup {
            open: Some(Open {
                capture,
                streams,
                backend,
            }),
        })
    }

    fn open(&self) -> &Open<B> {
        self.open
            .as_ref()
            .expect("a warmup holds its capture until consumed")
    }

    /// The stream being captured: run the warmup pass on it.
    pub fn stream(&self) -> &Stream {
        &self.open().streams.stream
    }

    /// End the warmup (its slices become free in the pool) and begin
    /// recording.
    ///
    /// # Errors
    /// The backend's refusal to begin; the capture is aborted then.
    pub fn start_recording(mut self) -> Result<CaptureRecording<B>> {
        let mut open = self.open.take().expect("a warmup is consumed once");
        if let Err(err) = open.capture.begin(&mut open.streams, &mut open.backend) {
            open.abort();
            return Err(err.into());
        }
        Ok(CaptureRecording { open: Some(open) })
    }

    /// Abort the capture (the same as dropping it).
    pub fn abort(self) {}
}

impl<B: GraphBackend> CaptureRecording<B> {
    fn open(&self) -> &Open<B> {
        self.open
            .as_ref()
            .expect("a recording holds its capture until consumed")
    }

    /// The stream being captured: run the recorded pass on it.
    pub fn stream(&self) -> &Stream {
        &self.open().streams.stream
    }

    /// Where the recorded pass issues its work (host op list, CUDA stream).
    pub fn recorder(&mut self) -> &mut B::Recorder {
        let open = self
            .open
            .as_mut()
            .expect("a recording holds its capture until consumed");
        open.backend.recorder()
    }

    /// Declare that the graph uses `handle` (weights, static inputs) that it
    /// did not reserve in the window: its page never moves while the graph
    /// lives, and the graph refuses to replay once it is freed or rebound.
    /// The graph holds its own pin on it, which ends when the graph drops;
    /// the owner's `get_resource` / `release_raw` are unaffected (see
    /// mem-capture's `Capture::uses`).
    ///
    /// # Errors
    /// None in this stage; the `Result` is mem-capture's stage check.
    pub fn uses(&mut self, handle: &mem_pools::ManagedMemoryHandle) -> Result<()> {
        let open = self
            .open
            .as_mut()
            .expect("a recording holds its capture until consumed");
        Ok(open.capture.uses(0, handle.binding())?)
    }

    /// Stop recording, pin the touched memory on the graph, seal.
    ///
    /// # Errors
    /// The backend's refusal (an empty graph, a graph with memory nodes);
    /// the capture is aborted then.
    pub fn end(mut self) -> Result<DeviceGraph<B>> {
        let mut open = self.open.take().expect("a recording is consumed once");
        match open.capture.end(&mut open.streams, &mut open.backend) {
            Ok(graph) => Ok(DeviceGraph {
                graph,
                streams: open.streams,
                backend: open.backend,
            }),
            Err(err) => {
                open.abort();
                Err(err.into())
            }
        }
    }

    /// Abort the capture (the same as dropping it).
    pub fn abort(self) {}
}

impl<B: GraphBackend> Drop for CaptureWarmup<B> {
    fn drop(&mut self) {
        if let Some(open) = self.open.take() {
            open.abort();
        }
    }
}

impl<B: GraphBackend> Drop for CaptureRecording<B> {
    fn drop(&mut self) {
        if let Some(open) = self.open.take() {
            open.abort();
        }
    }
}

impl<B: GraphBackend> DeviceGraph<B> {
    /// Launch the graph once.
    ///
    /// # Errors
    /// `CaptureError::GraphMemoryInvalidated` when memory it replays
    /// against was freed, rebound or given away; the backend's failure.
    pub fn replay(&mut self) -> Result<()> {
        Ok(self.graph.replay(&mut self.backend, &mut self.streams)?)
    }

    /// Check, without launching, that the graph's memory is still in place.
    pub fn verify(&mut self) -> Result<()> {
        Ok(self.graph.verify(&mut self.streams)?)
    }

    /// Slices pinned for the graph.
    pub fn pinned_slices(&self) -> usize {
        self.graph.pinned_slices()
    }

    /// The captured graph (mem-capture's).
    pub fn graph(&self) -> &CapturedGraph<B::Graph> {
        &self.graph
    }

    /// The backend the graph replays on.
    pub fn backend(&mut self) -> &mut B {
        &mut self.backend
    }

    /// The stream the graph was captured on.
    pub fn stream(&self) -> &Stream {
        &self.streams.stream
    }
}

impl<B: GraphBackend> std::fmt::Debug for CaptureWarmup<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureWarmup")
            .field(
                "stream",
                &self.open.as_ref().map(|o| o.streams.stream.index),
            )
            .finish_non_exhaustive()
    }
}

impl<B: GraphBackend> std::fmt::Debug for CaptureRecording<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureRecording")
            .field(
                "stream",
                &self.open.as_ref().map(|o| o.streams.stream.index),
            )
            .finish_non_exhaustive()
    }
}

impl<B: GraphBackend> std::fmt::Debug for DeviceGraph<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceGraph")
            .field("stream", &self.streams.stream.index)
            .field("pinned_slices", &self.pinned_slices())
            .finish_non_exhaustive()
    }
}
