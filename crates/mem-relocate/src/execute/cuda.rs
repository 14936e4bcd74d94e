//! CUDA: device-to-device relocation copies on a dedicated copy stream.
//!
//! [`CudaCopyQueue`] is the [`CopyQueue`] for pages held by a
//! [`CudaResource`] (through a [`ResourceStorage`] over it, or over any
//! adaptor stack on top of it). Its three steps:
//! 1. `wait_device`: record an event on every registered stream and make
//!    the copy stream wait for each — the copies are ordered after every
//!    stream's queued work without blocking the host;
//! 2. `copy`: `cuMemcpyDtoDAsync` on the copy stream, ranges checked by the
//!    resource against its live allocations;
//! 3. `wait_copies`: record an event on the copy stream and block the host
//!    on it, so nothing is committed (and no source page freed) before
//!    every byte landed. If that wait fails, the engine leaks sources and
//!    targets rather than free memory a copy may still write.
//!
//! With a meter ([`CudaCopyQueue::with_meter`]) each event record is
//! charged `EventRecord` and the host wait `StreamSynchronize` (a host wait
//! for one stream's work), the calls [`ModeledCopyQueue`] charges for the
//! same relocation on the host and simulated backends.
//!
//! Nothing here touches the driver unless a [`CudaResource`] exists, and
//! making one checks [`mem_storage::cuda_available`] first.

use std::sync::Arc;

use mem_pools::CopyQueue;
use mem_storage::{
    ComputeStorage, CudaResource, DeviceResource, DriverCall, DriverMeter, ResourceStorage,
    StorageError, StorageHandle, StreamId,
};

#[cfg(doc)]
use crate::execute::modeled::ModeledCopyQueue;

/// Relocation copies on a dedicated CUDA stream (see the module docs).
#[derive(Debug)]
pub struct CudaCopyQueue {
    cuda: Arc<CudaResource>,
    copy_stream: StreamId,
    copies: usize,
    meter: Option<Arc<DriverMeter>>,
}

impl CudaCopyQueue {
    /// A queue on a new non-blocking stream of `cuda`'s context.
    ///
    /// # Errors
    /// [`StorageError::Driver`] if the stream cannot be created.
    pub fn new(cuda: Arc<CudaResource>) -> Result<Self, StorageError> {
        let copy_stream = cuda.create_stream()?;
        Ok(Self {
            cuda,
            copy_stream,
            copies: 0,
            meter: None,
        })
    }

    /// Charge this queue's driver calls to `meter` (the device's).
    pub fn with_meter(mut self, meter: Arc<DriverMeter>) -> Self {
        self.meter = Some(meter);
        self
    }

    fn charge(&self, call: DriverCall, count: u64) {
        if let Some(meter) = &self.meter {
            meter.charge_many(call, count, 0);
        }
    }

    /// The stream copies run on.
    pub fn copy_stream(&self) -> StreamId {
        self.copy_stream
    }

    /// Copies enqueued since the last completed wait.
    pub fn pending_copies(&self) -> usize {
        self.copies
    }
}

impl Drop for CudaCopyQueue {
    fn drop(&mut self) {
        if let Err(err) = self.cuda.release_stream(self.copy_stream) {
            tracing::warn!(%err, "relocation copy stream could not be released");
        }
    }
}

impl<R: DeviceResource> CopyQueue<ResourceStorage<R>> for CudaCopyQueue {
    fn wait_device(&mut self, _storage: &mut ResourceStorage<R>) -> Result<(), StorageError> {
        // One event recorded (and waited on) per other stream.
        let others = self.cuda.stream_ids().len().saturating_sub(1) as u64;
        self.cuda.wait_for_all_streams(self.copy_stream)?;
        self.charge(DriverCall::EventRecord, others);
        Ok(())
    }

    fn copy(
        &mut self,
        storage: &mut ResourceStorage<R>,
        src: &StorageHandle,
        dst: &StorageHandle,
    ) -> Result<(), StorageError> {
        let from = storage.get(src)?;
        let to = storage.get(dst)?;
        if from.size > to.size {
            return Err(StorageError::OutOfBounds {
                id: dst.id,
                start: dst.offset(),
                end: dst.offset().saturating_add(from.size),
                page_size: to.size,
            });
        }
        self.cuda
            .copy(from.ptr, to.ptr, from.size, self.copy_stream)?;
        self.copies += 1;
        Ok(())
    }

    fn wait_copies(&mut self, _storage: &mut ResourceStorage<R>) -> Result<(), StorageError> {
        let done = self.cuda.record(self.copy_stream)?;
        self.charge(DriverCall::EventRecord, 1);
        done.synchronize()?;
        // A host wait: the device's default pool trims there too.
        if let Some(meter) = &self.meter {
            meter.charge_stream_synchronize();
        }
        self.copies = 0;
        Ok(())
    }
}

/// CUDA pages of one stream of a device.
pub type CudaStreamStorage = ResourceStorage<Arc<CudaResource>>;
