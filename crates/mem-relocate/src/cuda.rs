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
//! [`cuda_stream_set`] builds the reference [`StreamSet`] over one device:
//! one non-blocking stream and one `MemoryManagement` per stream.
//!
//! Nothing here touches the driver unless a [`CudaResource`] exists, and
//! making one checks [`mem_storage::cuda_available`] first.

use std::sync::Arc;

use mem_pools::{
    CopyQueue, MemoryConfiguration, MemoryDeviceProperties, MemoryManagement,
    MemoryManagementOptions, ServerLogger,
};
use mem_storage::{
    ComputeStorage, CudaResource, DeviceResource, ResourceStorage, StorageError, StorageHandle,
    StreamId,
};

use crate::stream_set::StreamSet;

/// Relocation copies on a dedicated CUDA stream (see the module docs).
#[derive(Debug)]
pub struct CudaCopyQueue {
    cuda: Arc<CudaResource>,
    copy_stream: StreamId,
    copies: usize,
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
        })
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
        self.cuda.wait_for_all_streams(self.copy_stream)
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
        done.synchronize()?;
        self.copies = 0;
        Ok(())
    }
}

/// CUDA pages of one stream of a device.
pub type CudaStreamStorage = ResourceStorage<Arc<CudaResource>>;

/// The reference stream set over `cuda`: `streams` new non-blocking streams
/// (at least one), each with its own `MemoryManagement` of `config`, moving
/// memory through a [`CudaCopyQueue`]; the device's total memory is the
/// capacity pressure is measured against.
///
/// # Errors
/// [`StorageError::Driver`] if a stream cannot be created or the device's
/// memory cannot be read.
pub fn cuda_stream_set(
    cuda: Arc<CudaResource>,
    streams: usize,
    config: MemoryConfiguration,
    properties: &MemoryDeviceProperties,
) -> Result<StreamSet<CudaStreamStorage>, StorageError> {
    let manager = |index: usize| -> Result<MemoryManagement<CudaStreamStorage>, StorageError> {
        let stream = cuda.create_stream()?;
        Ok(MemoryManagement::from_configuration(
            ResourceStorage::on_stream(cuda.clone(), stream),
            properties,
            config.clone(),
            Arc::new(ServerLogger::default()),
            MemoryManagementOptions::named(format!("cuda stream {index}")),
        ))
    };
    let mut set = StreamSet::new(manager(0)?, CudaCopyQueue::new(cuda.clone())?);
    for index in 1..streams.max(1) {
        set.add_stream(manager(index)?);
    }
    let total = set.memory(0).map(|m| m.storage().mem_info());
    if let Ok(Ok(info)) = total {
        set.set_capacity(Some(info.total));
    }
    Ok(set)
}
