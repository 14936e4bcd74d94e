//! CUDA graphs through cudarc: stream capture, a memory-node check,
//! instantiate, launch.
//!
//! Pitfalls this module owns:
//! - cudarc's per-allocation event tracking makes a `CudaSlice` use wait on
//!   events recorded *outside* the capture, which breaks it; tracking is
//!   turned off while capturing and restored after (cudarc's own capture
//!   test does the same). The switch is context-wide: a `CudaSlice` any
//!   thread makes during the window is untracked for life, so the recorded
//!   pass (and the rest of the process meanwhile) uses such slices only on
//!   the stream that made them;
//! - the capture mode is `THREAD_LOCAL`: other threads' streams keep
//!   allocating while one stream records (mem-relocate lets other streams
//!   add pages meanwhile), and the pool never allocates on this thread
//!   inside the window;
//! - a graph holding memory-alloc or memory-free nodes (any `stream.alloc*`
//!   inside the window becomes one) launches once and fails every relaunch:
//!   `end_capture` counts node types through `cuGraphGetNodes` /
//!   `cuGraphNodeGetType` and refuses such a graph;
//! - the executable is destroyed only after its stream finished, so the
//!   memory [`crate::CapturedGraph`] releases next is idle.
//!
//! Nothing here runs unless a [`CudaGraphBackend`] was built over a live
//! stream, which needs a CUDA context, which mem-storage only creates after
//! [`mem_storage::cuda_available`].

use std::sync::Arc;

use cudarc::driver::sys::{self, CUgraphInstantiate_flags, CUgraphNodeType, CUstreamCaptureMode};
use cudarc::driver::{CudaGraph, CudaStream, DriverError};
use mem_storage::{CudaResource, StreamId};

use crate::backend::GraphBackend;
use crate::error::CaptureError;
use crate::streams::CapturePool;

fn backend_error(op: &'static str) -> impl FnOnce(DriverError) -> CaptureError {
    move |err| CaptureError::Backend {
        op,
        message: err.to_string(),
    }
}

/// An instantiated CUDA graph on its stream.
pub struct CudaGraphExec {
    graph: Option<CudaGraph>,
    stream: Arc<CudaStream>,
}

impl CudaGraphExec {
    /// The cudarc graph (raw handles for inspection).
    pub fn graph(&self) -> Option<&CudaGraph> {
        self.graph.as_ref()
    }
}

impl std::fmt::Debug for CudaGraphExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaGraphExec").finish_non_exhaustive()
    }
}

impl Drop for CudaGraphExec {
    fn drop(&mut self) {
        // A launch may still run: finish it before the executable and then
        // the pinned memory go.
        if let Err(err) = self.stream.synchronize() {
            tracing::error!(%err, "synchronizing before destroying a CUDA graph failed");
        }
        drop(self.graph.take());
    }
}

/// CUDA stream capture on one stream.
pub struct CudaGraphBackend {
    stream: Arc<CudaStream>,
    capturing: bool,
    restore_tracking: bool,
}

impl std::fmt::Debug for CudaGraphBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaGraphBackend")
            .field("capturing", &self.capturing)
            .finish_non_exhaustive()
    }
}

impl CudaGraphBackend {
    /// Capture `stream`.
    ///
    /// Building one is `unsafe` because its captures switch cudarc's event
    /// tracking off for the whole context (module docs): a safe constructor
    /// would let safe code free a `CudaSlice` while another stream still
    /// uses it.
    ///
    /// ```compile_fail
    /// # fn f(stream: std::sync::Arc<cudarc::driver::CudaStream>) {
    /// let _ = mem_capture::cuda::CudaGraphBackend::new(stream);
    /// # }
    /// ```
    ///
    /// # Safety
    /// While a capture of this backend is open (from `begin_capture` until
    /// `end_capture` or `abort_capture`), every `CudaSlice` any thread
    /// creates in `stream`'s context is untracked for life, so the caller
    /// ensures that each such slice is used only on the stream that made it
    /// (or that the caller orders its cross-stream uses and frees itself,
    /// as cudarc's `disable_event_tracking` requires).
    pub unsafe fn new(stream: Arc<CudaStream>) -> Self {
        Self {
            stream,
            capturing: false,
            restore_tracking: false,
        }
    }

    /// Capture the stream `id` of a mem-storage CUDA resource.
    ///
    /// # Safety
    /// As [`CudaGraphBackend::new`].
    ///
    /// # Errors
    /// [`CaptureError::Backend`] when the resource knows no such stream.
    pub unsafe fn on_resource(resource: &CudaResource, id: StreamId) -> Result<Self, CaptureError> {
        let stream = resource
            .cuda_stream(id)
            .map_err(|err| CaptureError::Backend {
                op: "find the stream to capture",
                message: err.to_string(),
            })?;
        // SAFETY: the caller took on `new`'s contract (this fn's `# Safety`).
        Ok(unsafe { Self::new(stream) })
    }

    fn restore(&mut self) {
        if std::mem::take(&mut self.restore_tracking) {
            // SAFETY: tracking was on before this capture turned it off.
            // Slices made while it was off stay untracked (cudarc's rule);
            // gpumem memory is never a CudaSlice, and the recorded pass may
            // use a slice it made only on the capturing stream (module docs),
            // so none of them needs cross-stream events.
            unsafe { self.stream.context().enable_event_tracking() };
        }
    }
}

/// `(memory-alloc nodes, memory-free nodes)` of a captured graph.
fn memory_nodes(graph: sys::CUgraph) -> Result<(usize, usize), DriverError> {
    let mut count = 0usize;
    // SAFETY: `graph` is a live graph owned by the caller's CudaGraph; a null
    // node array asks only for the count, written to `count`.
    unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut count) }.result()?;
    let mut nodes: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); count];
    // SAFETY: `nodes` has room for `count` node handles, and `count` tells
    // the driver so; it writes back how many it stored.
    unsafe { sys::cuGraphGetNodes(graph, nodes.as_mut_ptr(), &mut count) }.result()?;
    let (mut alloc, mut free) = (0, 0);
    for &node in nodes.iter().take(count) {
        let mut kind = CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        // SAFETY: `node` came from cuGraphGetNodes on the live graph; `kind`
        // is a valid place for one node type.
        unsafe { sys::cuGraphNodeGetType(node, &mut kind) }.result()?;
        match kind {
            CUgraphNodeType::CU_GRAPH_NODE_TYPE_MEM_ALLOC => alloc += 1,
            CUgraphNodeType::CU_GRAPH_NODE_TYPE_MEM_FREE => free += 1,
            _ => {}
        }
    }
    Ok((alloc, free))
}

impl GraphBackend for CudaGraphBackend {
    type Graph = CudaGraphExec;
    type Recorder = Arc<CudaStream>;

    fn begin_capture(&mut self) -> Result<(), CaptureError> {
        if self.capturing {
            return Err(CaptureError::BackendBusy);
        }
        if self.stream.cu_stream().is_null() {
            // The driver refuses it too (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
            // this says why before event tracking is touched.
            return Err(CaptureError::Backend {
                op: "begin capture",
                message: "the legacy default (null) stream cannot be captured by CUDA; \
                          capture a created stream"
                    .into(),
            });
        }
        let ctx = self.stream.context().clone();
        if ctx.is_event_tracking() {
            // SAFETY: the recorded work is ordered on the one capturing
            // stream, and a slice made during the window is used only on it
            // (the contract of the unsafe `CudaGraphBackend::new` that built
            // this backend), so no slice needs cross-stream events; `restore`
            // turns tracking back on when the capture ends or aborts.
            unsafe { ctx.disable_event_tracking() };
            self.restore_tracking = true;
        }
        match self
            .stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        {
            Ok(()) => {
                self.capturing = true;
                Ok(())
            }
            Err(err) => {
                self.restore();
                Err(backend_error("begin capture")(err))
            }
        }
    }

    fn recorder(&mut self) -> &mut Arc<CudaStream> {
        &mut self.stream
    }

    fn is_capturing(&self) -> bool {
        self.capturing
    }

    fn end_capture(&mut self) -> Result<CudaGraphExec, CaptureError> {
        if !self.capturing {
            return Err(CaptureError::NotCapturing);
        }
        // Out of capture first, whatever follows: never wedged.
        self.capturing = false;
        let ended = self.stream.end_capture(CUgraphInstantiate_flags(0));
        self.restore();
        let graph = ended
            .map_err(backend_error("end capture"))?
            .ok_or(CaptureError::EmptyGraph)?;
        let (alloc_nodes, free_nodes) =
            memory_nodes(graph.cu_graph()).map_err(backend_error("inspect graph nodes"))?;
        if alloc_nodes + free_nodes > 0 {
            return Err(CaptureError::MemoryNodes {
                alloc_nodes,
                free_nodes,
            });
        }
        if let Err(err) = graph.upload() {
            tracing::warn!(%err, "uploading the graph failed; the first launch uploads it");
        }
        Ok(CudaGraphExec {
            graph: Some(graph),
            stream: self.stream.clone(),
        })
    }

    fn abort_capture(&mut self) {
        if std::mem::take(&mut self.capturing) {
            // The recorded graph (if the capture was not invalidated) is
            // dropped, which destroys it.
            if let Err(err) = self.stream.end_capture(CUgraphInstantiate_flags(0)) {
                tracing::warn!(%err, "ending an aborted capture failed; the stream is out of capture");
            }
            self.restore();
        }
    }

    fn replay(
        &mut self,
        graph: &CudaGraphExec,
        _pools: &mut [&mut dyn CapturePool],
    ) -> Result<(), CaptureError> {
        if self.capturing {
            return Err(CaptureError::BackendBusy);
        }
        let exec = graph.graph.as_ref().ok_or(CaptureError::EmptyGraph)?;
        exec.launch().map_err(backend_error("launch"))
    }
}
