//! The streams of a [`super::CudaResource`], named by [`StreamId`].
//!
//! Layers above speak of streams by number (a trace, a pool, a relocation
//! plan), so the resource keeps the map from number to cudarc stream.
//! Stream 0 is the context's default (null) stream. Lookups take a read
//! lock only; registering a stream is rare and takes the write lock.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use cudarc::driver::{CudaContext, CudaStream, DriverError, sys};

use crate::cuda::driver;
use crate::error::StorageError;
use crate::id::StreamId;

const BACKEND: &str = "cuda";

/// StreamId → stream, for one context.
#[derive(Debug)]
pub(crate) struct StreamRegistry {
    streams: RwLock<HashMap<StreamId, Arc<CudaStream>>>,
    next: AtomicU64,
}

impl StreamRegistry {
    /// A registry holding the context's default stream as stream 0.
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Self {
        let mut streams = HashMap::new();
        streams.insert(StreamId::DEFAULT, ctx.default_stream());
        Self {
            streams: RwLock::new(streams),
            next: AtomicU64::new(1),
        }
    }

    /// The stream named `id`.
    pub(crate) fn get(&self, id: StreamId) -> Result<Arc<CudaStream>, StorageError> {
        let streams = self.streams.read().unwrap_or_else(|p| p.into_inner());
        streams
            .get(&id)
            .cloned()
            .ok_or(StorageError::UnknownStream {
                backend: BACKEND,
                stream: id.0,
            })
    }

    /// Name `stream` (which must belong to `ctx`) with a fresh id.
    pub(crate) fn register(
        &self,
        ctx: &Arc<CudaContext>,
        stream: Arc<CudaStream>,
    ) -> Result<StreamId, StorageError> {
        if stream.context() != ctx {
            return Err(StorageError::Driver {
                operation: "registering a stream of another context",
                source: DriverError(sys::cudaError_enum::CUDA_ERROR_INVALID_CONTEXT),
            });
        }
        let id = StreamId(self.next.fetch_add(1, Ordering::Relaxed));
        let mut streams = self.streams.write().unwrap_or_else(|p| p.into_inner());
        streams.insert(id, stream);
        Ok(id)
    }

    /// Create a non-blocking stream on `ctx` and name it.
    pub(crate) fn create(&self, ctx: &Arc<CudaContext>) -> Result<StreamId, StorageError> {
        let stream = ctx.new_stream().map_err(driver("creating a stream"))?;
        self.register(ctx, stream)
    }

    /// Forget stream `id` (the default stream stays). The stream is
    /// destroyed when the last `Arc` to it goes.
    pub(crate) fn remove(&self, id: StreamId) -> Result<Arc<CudaStream>, StorageError> {
        let unknown = StorageError::UnknownStream {
            backend: BACKEND,
            stream: id.0,
        };
        if id == StreamId::DEFAULT {
            return Err(unknown);
        }
        let mut streams = self.streams.write().unwrap_or_else(|p| p.into_inner());
        streams.remove(&id).ok_or(unknown)
    }

    /// Every registered stream id.
    pub(crate) fn ids(&self) -> Vec<StreamId> {
        let streams = self.streams.read().unwrap_or_else(|p| p.into_inner());
        let mut ids: Vec<_> = streams.keys().copied().collect();
        ids.sort();
        ids
    }
}
