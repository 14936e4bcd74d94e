//! `DeviceResource` for [`CudaResource`]: driver allocation and frees.
//!
//! Sync mode calls `cuMemAlloc` / `cuMemFree` (the free waits for the
//! device); stream-ordered mode calls `cuMemAllocAsync` / `cuMemFreeAsync`
//! on the call's stream, from the device's default pool, so freed memory
//! is reused in stream order without a device-wide wait. A driver
//! out-of-memory becomes [`StorageError::OutOfMemory`] with the free and
//! total bytes read right after, so callers can decide to reclaim.

use cudarc::driver::{DriverError, result, sys};

use crate::cuda::resource::{BACKEND, CUDA_ALIGNMENT, CudaResource};
use crate::cuda::{CudaAllocMode, driver};
use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};
use crate::resource::{DeviceResource, MemInfo};

impl DeviceResource for CudaResource {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn allocate(&self, bytes: u64, stream: StreamId) -> Result<DevicePtr, StorageError> {
        let too_big = StorageError::TooBig {
            backend: BACKEND,
            refused_by: crate::Refuser::Device,
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
        let s = self.streams.get(stream)?;
        self.not_capturing(&s)?;
        s.synchronize().map_err(driver("synchronizing a stream"))
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
        self.release_grants();
        let live = std::mem::take(self.live.get_mut().unwrap_or_else(|p| p.into_inner()));
        if live.is_empty() {
            return;
        }
        tracing::warn!(
            count = live.len(),
            bytes = live.values().sum::<u64>(),
            "CUDA resource dropped with live allocations; freeing them after its streams finish"
        );
        // This resource's streams (the default stream first) are the ones
        // its allocations were ordered on: a stream wait each, never the
        // whole device.
        let waited = self.stream_ids().into_iter().try_for_each(|id| {
            let stream = self.cuda_stream(id)?;
            stream
                .synchronize()
                .map_err(driver("waiting for a stream at teardown"))
        });
        if let Err(err) = waited {
            // Work may still use the memory: leaking is safer than freeing.
            tracing::error!(%err, "a stream did not synchronize; leaking live allocations");
            return;
        }
        for ptr in live.into_keys() {
            // SAFETY: `ptr` is a live allocation of this resource, every
            // stream it was ordered on is idle, and the map was emptied, so
            // each is freed exactly once.
            // `cuMemFree` accepts stream-ordered allocations too.
            if let Err(err) = unsafe { result::free_sync(ptr) } {
                tracing::error!(ptr, %err, "freeing a live allocation while dropping failed");
            }
        }
    }
}
