//! `CudaResource`: whole driver allocations on one device.
//!
//! Every allocation made is remembered (base → bytes) so that a free of an
//! address this resource does not own, or a copy running past an
//! allocation, is a typed error here instead of a driver fault or silent
//! corruption there. That costs one ordered-map operation per call, small
//! next to a driver allocation (microseconds) — and the pools above call
//! this layer once per page, not once per tensor.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaStream, sys};

use crate::cuda::streams::StreamRegistry;
use crate::cuda::{CudaAllocMode, driver};
use crate::error::StorageError;
use crate::id::StreamId;

pub(crate) const BACKEND: &str = "cuda";

/// What `cuMemAlloc` guarantees for every address.
pub(crate) const CUDA_ALIGNMENT: u64 = 256;

/// Device memory of one CUDA device, allocated through the driver.
#[doc(alias = "CudaSyncResource")]
#[doc(alias = "CudaAsyncResource")]
#[derive(Debug)]
pub struct CudaResource {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) mode: CudaAllocMode,
    pub(crate) streams: StreamRegistry,
    /// Live allocations: base → bytes requested.
    pub(crate) live: Mutex<BTreeMap<u64, u64>>,
    pub(crate) total: u64,
    /// The peers this resource opened its pages to (see `peers.rs`).
    pub(crate) granted: Mutex<Vec<Arc<CudaContext>>>,
}

impl CudaResource {
    /// Device `ordinal`, stream-ordered when the device supports memory
    /// pools (`CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED`), else synchronous.
    ///
    /// # Errors
    /// [`StorageError::NoDevice`] when the driver library cannot be loaded or
    /// the device cannot be opened (the reason names the driver's error);
    /// [`StorageError::Driver`] if its memory size cannot be read.
    pub fn new(ordinal: usize) -> Result<Self, StorageError> {
        let ctx = open_context(ordinal)?;
        let mode = if ctx.has_async_alloc() {
            CudaAllocMode::StreamOrdered
        } else {
            CudaAllocMode::Sync
        };
        Self::from_context(ctx, mode)
    }

    /// Device `ordinal` with an explicit allocation mode.
    ///
    /// # Errors
    /// As [`CudaResource::new`], and [`StorageError::Unsupported`] for
    /// [`CudaAllocMode::StreamOrdered`] on a device without memory pools.
    pub fn with_mode(ordinal: usize, mode: CudaAllocMode) -> Result<Self, StorageError> {
        Self::from_context(open_context(ordinal)?, mode)
    }

    /// Allocate on an existing context (shared with a runtime's kernels).
    ///
    /// # Errors
    /// [`StorageError::Unsupported`] for stream-ordered allocation on a
    /// device without memory pools; [`StorageError::Driver`] if the device's
    /// memory size cannot be read.
    pub fn from_context(ctx: Arc<CudaContext>, mode: CudaAllocMode) -> Result<Self, StorageError> {
        if mode == CudaAllocMode::StreamOrdered && !ctx.has_async_alloc() {
            return Err(StorageError::Unsupported {
                operation: "stream-ordered allocation (the device has no memory pools)",
                backend: BACKEND,
            });
        }
        let total = ctx.total_mem().map_err(driver("reading total memory"))? as u64;
        Ok(Self {
            streams: StreamRegistry::new(&ctx),
            ctx,
            mode,
            live: Mutex::new(BTreeMap::new()),
            total,
            granted: Mutex::new(Vec::new()),
        })
    }

    /// How this resource allocates.
    pub fn mode(&self) -> CudaAllocMode {
        self.mode
    }

    /// The context allocations are made in.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Create a new non-blocking stream and name it.
    pub fn create_stream(&self) -> Result<StreamId, StorageError> {
        self.streams.create(&self.ctx)
    }

    /// Name an existing stream of this resource's context.
    pub fn register_stream(&self, stream: Arc<CudaStream>) -> Result<StreamId, StorageError> {
        self.streams.register(&self.ctx, stream)
    }

    /// Forget a stream created or registered here (not the default stream).
    pub fn release_stream(&self, stream: StreamId) -> Result<(), StorageError> {
        self.streams.remove(stream).map(drop)
    }

    /// The cudarc stream named `stream`, to launch work on.
    pub fn cuda_stream(&self, stream: StreamId) -> Result<Arc<CudaStream>, StorageError> {
        self.streams.get(stream)
    }

    /// Every registered stream, the default stream (0) first.
    pub fn stream_ids(&self) -> Vec<StreamId> {
        self.streams.ids()
    }

    /// Number of live allocations.
    pub fn live_allocations(&self) -> usize {
        self.lock().len()
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, u64>> {
        // Single inserts and removes: a poisoned map is still consistent.
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn bind(&self) -> Result<(), StorageError> {
        self.ctx
            .bind_to_thread()
            .map_err(driver("binding the context to this thread"))
    }

    pub(crate) fn out_of_memory(&self, requested: u64) -> StorageError {
        let free = self.ctx.mem_get_info().map_or(0, |(free, _)| free as u64);
        StorageError::OutOfMemory {
            backend: BACKEND,
            refused_by: crate::Refuser::Device,
            requested,
            free,
            total: self.total,
        }
    }
}

/// Retain the primary context of device `ordinal`, if the driver loads.
pub(crate) fn open_context(ordinal: usize) -> Result<Arc<CudaContext>, StorageError> {
    if !crate::cuda_available() {
        return Err(StorageError::NoDevice {
            reason: "the CUDA driver library (libcuda) cannot be loaded".into(),
        });
    }
    // Every way `cuInit` / context creation fails here (no device, a bad
    // ordinal, a driver too old for the bindings, a driver/library version
    // mismatch) means the same to a caller: no usable device.
    CudaContext::new(ordinal).map_err(|err| StorageError::NoDevice {
        reason: match err.0 {
            sys::cudaError_enum::CUDA_ERROR_NO_DEVICE
            | sys::cudaError_enum::CUDA_ERROR_INVALID_DEVICE => {
                format!("no CUDA device {ordinal}: {err}")
            }
            _ => format!("CUDA device {ordinal} cannot be opened: {err}"),
        },
    })
}
