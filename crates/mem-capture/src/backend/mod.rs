//! The driver side of a capture: record a stream's work into a graph and
//! launch it again.
//!
//! Two implementations: [`crate::HostGraphBackend`] (a recorded list of
//! operations over host memory, so the whole protocol runs with no GPU) and
//! [`crate::cuda::CudaGraphBackend`] (CUDA stream capture through cudarc).
//! [`crate::Capture`] drives the begin/end/abort calls in its sequence; a
//! runtime only calls [`GraphBackend::recorder`] inside the recorded pass and
//! replays through [`crate::CapturedGraph::replay`].

use crate::error::CaptureError;
use crate::streams::CapturePool;

pub mod cuda;
pub(crate) mod host;
pub(crate) mod host_op;

/// Stream capture for one stream.
pub trait GraphBackend {
    /// An instantiated graph, ready to launch.
    type Graph;
    /// What the recorded pass issues its work to (the host op list; the CUDA
    /// stream being captured).
    type Recorder: ?Sized;

    /// Start recording the stream.
    ///
    /// # Errors
    /// [`CaptureError::BackendBusy`] when already capturing; the driver's
    /// refusal as [`CaptureError::Backend`]. On error the stream is not
    /// capturing.
    fn begin_capture(&mut self) -> Result<(), CaptureError>;

    /// Where the recorded pass issues work; meaningful only while capturing.
    fn recorder(&mut self) -> &mut Self::Recorder;

    /// Whether the stream is capturing now.
    fn is_capturing(&self) -> bool;

    /// Stop recording and instantiate the graph.
    ///
    /// The stream leaves capture whatever the outcome, so it is never left
    /// wedged.
    ///
    /// # Errors
    /// [`CaptureError::NotCapturing`], [`CaptureError::EmptyGraph`],
    /// [`CaptureError::MemoryNodes`] for a graph that allocates or frees
    /// itself, or the driver's refusal.
    fn end_capture(&mut self) -> Result<Self::Graph, CaptureError>;

    /// Stop recording and discard what was recorded. Idempotent: after it
    /// the stream is not capturing.
    fn abort_capture(&mut self);

    /// Launch `graph` once. `pools` are the streams' capture pools, for a
    /// backend that replays through them (the host one); a device backend
    /// ignores them.
    ///
    /// # Errors
    /// [`CaptureError::BackendBusy`] while capturing (a launch would be
    /// recorded), or the launch's failure.
    fn replay(
        &mut self,
        graph: &Self::Graph,
        pools: &mut [&mut dyn CapturePool],
    ) -> Result<(), CaptureError>;
}
