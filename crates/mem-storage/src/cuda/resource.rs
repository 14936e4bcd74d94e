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

use cudarc::driver::{CudaContext, CudaStream, DriverError, result, sys};

use crate::cuda::streams::StreamRegistry;
use crate::cuda::{CudaAllocMode, driver};
use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};
use crate::resource::{DeviceResource, MemInfo};

pub(crate) const BACKEND: &str = "cuda";

/// What `cuMemAlloc` guarantees for every address.
const CUDA_ALIGNMENT: u64 = 256;

/// Device memory of one CUDA device, allocated through the driver.
#[doc(alias = "CudaSyncResource")]
#[doc(alias = "CudaAsyncResource")]
#[derive(Debug)]
pub struct CudaResource {
    ctx: Arc<CudaContext>,
    mode: CudaAllocMode,
    pub(crate) streams: StreamRegistry,
    /// Live allocations: base → bytes requested.
    pub(crate) live: Mutex<BTreeMap<u64, u64>>,
    total: u64,
}

impl CudaResource {
    /// Device `ordinal`, stream-ordered when the device supports memory
    /// pools (`CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED`), else synchronous.
    ///
    /// # Errors
    /// [`StorageError::NoDevice`] when the driver library cannot be loaded or
    /// the device does not exist; [`StorageError::Driver`] for other driver
    /// failures.
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

    fn out_of_memory(&self, requested: u64) -> StorageError {
        let free = self.ctx.mem_get_info().map_or(0, |(free, _)| free as u64);
        StorageError::OutOfMemory {
            backend: BACKEND,
            requested,
            free,
            total: self.total,
        }
    }
}

/// Retain the primary context of device `ordinal`, if the driver loads.
fn open_context(ordinal: usize) -> Result<Arc<CudaContext>, StorageError> {
    if !crate::cuda_available() {
        return Err(StorageError::NoDevice {
            reason: "the CUDA driver library (libcuda) cannot be loaded".into(),
        });
    }
    CudaContext::new(ordinal).map_err(|err| match err.0 {
        sys::cudaError_enum::CUDA_ERROR_NO_DEVICE
        | sys::cudaError_enum::CUDA_ERROR_INVALID_DEVICE => StorageError::NoDevice {
            reason: format!("no CUDA device {ordinal}: {err}"),
        },
        _ => StorageError::Driver {
            operation: "creating a context",
            source: err,
        },
    })
}

impl DeviceResource for CudaResource {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn allocate(&self, bytes: u64, stream: StreamId) -> Result<DevicePtr, StorageError> {
        let too_big = StorageError::TooBig {
            backend: BACKEND,
            requested: bytes,
            max: self.total,
        };
        if bytes > self.total {
            return Err(too_big);
        }
        // The driver refuses 0 bytes; a zero request still gets a unique address.
        let size = usize::try_from(bytes.max(1)).map_err(|_| too_big)?;
        let cu_stream = self.streams.get(stream)?;
        self.bind()?;
        let allocated = match self.mode {
            // SAFETY: the context is bound; the memory is uninitialised
            // bytes, which is all a page promises.
            CudaAllocMode::Sync => unsafe { result::malloc_sync(size) },
            // SAFETY: `cu_stream` is a live stream of the bound context (the
            // registry holds an `Arc` to it); uses on other streams are
            // ordered by the layers above through events.
            CudaAllocMode::StreamOrdered => unsafe {
                result::malloc_async(cu_stream.cu_stream(), size)
            },
        };
        match allocated {
            Ok(ptr) => {
                self.lock().insert(ptr, bytes);
                Ok(DevicePtr(ptr))
            }
            Err(DriverError(sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY)) => {
                Err(self.out_of_memory(bytes))
            }
            Err(source) => Err(StorageError::Driver {
                operation: "allocating device memory",
                source,
            }),
        }
    }

    fn deallocate(&self, ptr: DevicePtr, bytes: u64, stream: StreamId) -> Result<(), StorageError> {
        let cu_stream = self.streams.get(stream)?;
        {
            let mut live = self.lock();
            if live.get(&ptr.0) != Some(&bytes) {
                return Err(StorageError::UnknownPointer {
                    backend: BACKEND,
                    ptr: ptr.0,
                    bytes,
                });
            }
            // Taken out while the driver frees it, so no other call can use it.
            live.remove(&ptr.0);
        }
        let freed = self.bind().and_then(|()| {
            match self.mode {
                // SAFETY: `ptr` came from `malloc_sync` here and was just
                // removed from the live map, so it is freed exactly once.
                CudaAllocMode::Sync => unsafe { result::free_sync(ptr.0) },
                // SAFETY: `ptr` came from `malloc_async` on this context and
                // was just removed from the live map; freeing it in order on
                // `stream` is what the caller asked for.
                CudaAllocMode::StreamOrdered => unsafe {
                    result::free_async(ptr.0, cu_stream.cu_stream())
                },
            }
            .map_err(driver("freeing device memory"))
        });
        if freed.is_err() {
            // Release was not proven: the allocation stays owned and counted.
            self.lock().insert(ptr.0, bytes);
        }
        freed
    }

    fn alignment(&self) -> u64 {
        CUDA_ALIGNMENT
    }

    fn mem_info(&self) -> Result<MemInfo, StorageError> {
        let (free, total) = self
            .ctx
            .mem_get_info()
            .map_err(driver("reading memory info"))?;
        Ok(MemInfo {
            free: free as u64,
            total: total as u64,
        })
    }

    fn write(&self, dst: DevicePtr, data: &[u8], stream: StreamId) -> Result<(), StorageError> {
        self.write_bytes(dst, data, stream)
    }

    fn read(&self, src: DevicePtr, out: &mut [u8], stream: StreamId) -> Result<(), StorageError> {
        self.read_bytes(src, out, stream)
    }

    fn fill(
        &self,
        dst: DevicePtr,
        value: u8,
        bytes: u64,
        stream: StreamId,
    ) -> Result<(), StorageError> {
        self.fill_bytes(dst, value, bytes, stream)
    }

    fn copy(
        &self,
        src: DevicePtr,
        dst: DevicePtr,
        bytes: u64,
        stream: StreamId,
    ) -> Result<(), StorageError> {
        self.copy_bytes(src, dst, bytes, stream)
    }

    fn synchronize(&self, stream: StreamId) -> Result<(), StorageError> {
        self.streams
            .get(stream)?
            .synchronize()
            .map_err(driver("synchronizing a stream"))
    }

    fn stream_wait(&self, waiter: StreamId, waited: StreamId) -> Result<(), StorageError> {
        if waiter == waited {
            return Ok(());
        }
        let event = self.record(waited)?;
        self.wait_event(waiter, &event)
    }
}

impl Drop for CudaResource {
    fn drop(&mut self) {
        let live = std::mem::take(self.live.get_mut().unwrap_or_else(|p| p.into_inner()));
        if live.is_empty() {
            return;
        }
        tracing::warn!(
            count = live.len(),
            bytes = live.values().sum::<u64>(),
            "CUDA resource dropped with live allocations; freeing them after the device is idle"
        );
        if let Err(err) = self.ctx.synchronize() {
            // Work may still use the memory: leaking is safer than freeing.
            tracing::error!(%err, "device did not synchronize; leaking live allocations");
            return;
        }
        for ptr in live.into_keys() {
            // SAFETY: `ptr` is a live allocation of this resource, the device
            // is idle, and the map was emptied, so each is freed exactly once.
            // `cuMemFree` accepts stream-ordered allocations too.
            if let Err(err) = unsafe { result::free_sync(ptr) } {
                tracing::error!(ptr, %err, "freeing a live allocation while dropping failed");
            }
        }
    }
}
