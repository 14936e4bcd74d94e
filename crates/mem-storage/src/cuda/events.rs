//! Events: "this much of that stream's work", to order streams and to wait.
//!
//! The relocation engine copies on its own stream. Before a byte moves, the
//! copy stream must wait for every user stream's queued work; before a plan
//! is committed, the host must wait for the copies. Both are events:
//! [`super::CudaResource::record`] marks a stream's work so far,
//! [`super::CudaResource::wait_event`] makes another stream wait for it
//! without blocking the host, and [`CudaEventHandle::synchronize`] blocks
//! the host until it is done.

use cudarc::driver::CudaEvent;

use crate::cuda::driver;
use crate::cuda::resource::CudaResource;
use crate::error::StorageError;
use crate::id::StreamId;

/// A recorded point in one stream's work.
#[derive(Debug)]
pub struct CudaEventHandle {
    event: CudaEvent,
    stream: StreamId,
}

impl CudaEventHandle {
    /// The stream the event was recorded on.
    pub fn stream(&self) -> StreamId {
        self.stream
    }

    /// Block the host until the recorded work is complete.
    pub fn synchronize(&self) -> Result<(), StorageError> {
        self.event
            .synchronize()
            .map_err(driver("waiting for an event"))
    }

    /// Whether the recorded work is complete, without waiting.
    pub fn is_complete(&self) -> Result<bool, StorageError> {
        self.event
            .try_is_complete()
            .map_err(driver("querying an event"))
    }

    /// The cudarc event, for callers that launch their own work.
    pub fn cuda_event(&self) -> &CudaEvent {
        &self.event
    }
}

impl CudaResource {
    /// Record the work queued on `stream` so far.
    pub fn record(&self, stream: StreamId) -> Result<CudaEventHandle, StorageError> {
        let cu_stream = self.cuda_stream(stream)?;
        let event = cu_stream
            .record_event(None)
            .map_err(driver("recording an event"))?;
        Ok(CudaEventHandle { event, stream })
    }

    /// Make work queued on `stream` from now on wait for `event`, without
    /// blocking the host.
    pub fn wait_event(
        &self,
        stream: StreamId,
        event: &CudaEventHandle,
    ) -> Result<(), StorageError> {
        self.cuda_stream(stream)?
            .wait(&event.event)
            .map_err(driver("making a stream wait on an event"))
    }

    /// Make `waiter` wait for everything queued on every other registered
    /// stream so far: the ordering a copy stream needs before it moves
    /// memory that any stream may still be using.
    pub fn wait_for_all_streams(&self, waiter: StreamId) -> Result<(), StorageError> {
        for other in self.stream_ids() {
            if other != waiter {
                let event = self.record(other)?;
                self.wait_event(waiter, &event)?;
            }
        }
        Ok(())
    }
}
