//! The host-simulated graph backend: a recorded list of operations over
//! host memory that replays them.
//!
//! Like a CUDA graph, a recording *does not execute*: the recorded pass only
//! appends operations, each over a storage view (page id, offset, size)
//! resolved while recording — the equivalent of the raw pointers a CUDA
//! graph bakes into its nodes. Replay runs them in order through the pool's
//! storage. Nothing here can allocate: there is no allocation operation, so
//! a host graph holds no memory nodes by construction. A view whose page was
//! freed fails at replay with the storage's `UnknownId`, never touching
//! another allocation's bytes; [`crate::CapturedGraph`] refuses earlier, when
//! its pinned memory moved.

use std::sync::Arc;

use mem_storage::StorageHandle;

use crate::backend::GraphBackend;
use crate::backend::host_op::{HostOp, RunError};
use crate::error::CaptureError;
use crate::streams::CapturePool;

/// Where the recorded pass appends operations (see [`HostOp`]).
#[derive(Debug, Default)]
pub struct HostRecorder {
    ops: Option<Vec<HostOp>>,
}

impl HostRecorder {
    fn push(&mut self, op: HostOp) -> Result<(), CaptureError> {
        self.ops
            .as_mut()
            .ok_or(CaptureError::NotCapturing)?
            .push(op);
        Ok(())
    }

    /// Record writing `data` at the start of `dst`.
    ///
    /// # Errors
    /// [`CaptureError::WriteTooLong`], [`CaptureError::NotCapturing`].
    pub fn write(
        &mut self,
        pool: usize,
        dst: StorageHandle,
        data: &[u8],
    ) -> Result<(), CaptureError> {
        if data.len() as u64 > dst.size() {
            return Err(CaptureError::WriteTooLong {
                len: data.len() as u64,
                size: dst.size(),
            });
        }
        self.push(HostOp::Write {
            pool,
            dst,
            data: data.into(),
        })
    }

    /// Record setting every byte of `dst` to `value`.
    ///
    /// # Errors
    /// [`CaptureError::NotCapturing`].
    pub fn fill(&mut self, pool: usize, dst: StorageHandle, value: u8) -> Result<(), CaptureError> {
        self.push(HostOp::Fill { pool, dst, value })
    }

    /// Record copying `src` into `dst` within one pool.
    ///
    /// # Errors
    /// [`CaptureError::CopySizeMismatch`], [`CaptureError::NotCapturing`].
    pub fn copy(
        &mut self,
        pool: usize,
        src: StorageHandle,
        dst: StorageHandle,
    ) -> Result<(), CaptureError> {
        if src.size() != dst.size() {
            return Err(CaptureError::CopySizeMismatch {
                src: src.size(),
                dst: dst.size(),
            });
        }
        self.push(HostOp::Copy { pool, src, dst })
    }

    /// Record a kernel over `args` (pool index, view).
    ///
    /// # Errors
    /// [`CaptureError::NotCapturing`].
    pub fn kernel(
        &mut self,
        name: &'static str,
        args: Vec<(usize, StorageHandle)>,
        body: impl Fn(&mut [Vec<u8>]) + Send + Sync + 'static,
    ) -> Result<(), CaptureError> {
        self.push(HostOp::Kernel {
            name,
            args,
            body: Arc::new(body),
        })
    }

    /// Operations recorded so far in the open capture (0 when not capturing).
    pub fn recorded(&self) -> usize {
        self.ops.as_ref().map_or(0, Vec::len)
    }
}

/// An instantiated host graph: the operations, in order.
#[derive(Debug, Clone)]
pub struct HostGraph {
    ops: Vec<HostOp>,
}

impl HostGraph {
    /// The recorded operations.
    pub fn ops(&self) -> &[HostOp] {
        &self.ops
    }
}

/// The host-simulated [`GraphBackend`].
#[derive(Debug, Default)]
pub struct HostGraphBackend {
    recorder: HostRecorder,
    launches: u64,
}

impl HostGraphBackend {
    /// A backend with nothing recording.
    pub fn new() -> Self {
        Self::default()
    }

    /// Graphs launched so far.
    pub fn launches(&self) -> u64 {
        self.launches
    }
}

impl GraphBackend for HostGraphBackend {
    type Graph = HostGraph;
    type Recorder = HostRecorder;

    fn begin_capture(&mut self) -> Result<(), CaptureError> {
        if self.recorder.ops.is_some() {
            return Err(CaptureError::BackendBusy);
        }
        self.recorder.ops = Some(Vec::new());
        Ok(())
    }

    fn recorder(&mut self) -> &mut HostRecorder {
        &mut self.recorder
    }

    fn is_capturing(&self) -> bool {
        self.recorder.ops.is_some()
    }

    fn end_capture(&mut self) -> Result<HostGraph, CaptureError> {
        let ops = self.recorder.ops.take().ok_or(CaptureError::NotCapturing)?;
        if ops.is_empty() {
            return Err(CaptureError::EmptyGraph);
        }
        Ok(HostGraph { ops })
    }

    fn abort_capture(&mut self) {
        self.recorder.ops = None;
    }

    fn replay(
        &mut self,
        graph: &HostGraph,
        pools: &mut [&mut dyn CapturePool],
    ) -> Result<(), CaptureError> {
        if self.is_capturing() {
            return Err(CaptureError::BackendBusy);
        }
        // Check every pool index first, so a bad graph changes no byte.
        if let Some(pool) = graph
            .ops
            .iter()
            .flat_map(HostOp::pools)
            .find(|&p| p >= pools.len())
        {
            return Err(CaptureError::UnknownPool {
                pool,
                pools: pools.len(),
            });
        }
        for (index, op) in graph.ops.iter().enumerate() {
            op.run(pools).map_err(|err| match err {
                RunError::Pool(pool, pools) => CaptureError::UnknownPool { pool, pools },
                RunError::Storage(source) => CaptureError::Replay {
                    op: index,
                    what: op.what(),
                    source,
                },
            })?;
        }
        self.launches += 1;
        Ok(())
    }
}
