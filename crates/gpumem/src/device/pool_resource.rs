//! `PoolResource`: a device's pools in the shape RMM users and C-style
//! runtimes expect — `allocate(bytes, stream)` → address,
//! `deallocate(ptr, bytes, stream)` — as a mem-storage [`DeviceResource`].
//!
//! Why: anything written against that trait (the logging, statistics,
//! tracking and fault-injection adaptors, a runtime's own resource stack)
//! then sits on gpumem's pools unchanged. Each allocation is a handle of
//! the stream named by `stream` plus a [`DevicePtrGuard`], so its address
//! stays valid (never moves) until it is deallocated. Deallocating on
//! another stream than the one that allocated is a `record_use` there: the
//! memory is reused only after that stream's prior work, which is the
//! stream-ordered contract of the trait.

use std::collections::BTreeMap;
use std::sync::Mutex;

use mem_pools::{IoError, ManagedMemoryHandle};
use mem_storage::{
    ComputeStorage, DevicePtr, DeviceResource, MemInfo, StorageError, StorageHandle,
    StorageUtilization, StreamId,
};

use crate::error::GpuMemError;
use crate::shared::Device;
use crate::stream::{DevicePtrGuard, Stream};

const BACKEND: &str = "gpumem";

/// One allocation handed out by address.
#[derive(Debug)]
struct Live {
    handle: ManagedMemoryHandle,
    _guard: DevicePtrGuard,
    bytes: u64,
}

/// A [`Device`]'s pools as a [`DeviceResource`] (see the module docs).
#[derive(Debug)]
pub struct PoolResource {
    device: Device,
    /// Address → allocation, ordered so a byte range finds its allocation.
    live: Mutex<BTreeMap<u64, Live>>,
}

impl PoolResource {
    /// Serve `device`'s streams through the resource trait.
    pub fn new(device: Device) -> Self {
        Self {
            device,
            live: Mutex::new(BTreeMap::new()),
        }
    }

    /// The device underneath.
    pub fn device(&self) -> &Device {
        &self.device
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Live>> {
        // Inserts and removes are single map operations: a panic elsewhere
        // cannot leave the map half changed.
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stream(&self, id: StreamId) -> Result<Stream, StorageError> {
        self.device
            .streams()
            .into_iter()
            .find(|s| s.id() == id)
            .ok_or(StorageError::UnknownStream {
                backend: BACKEND,
                stream: id.0,
            })
    }

    /// The stream owning the allocation holding `ptr..ptr + bytes`, and that
    /// range as a view of its storage.
    fn view(&self, ptr: DevicePtr, bytes: u64) -> Result<(Stream, StorageHandle), StorageError> {
        let unknown = StorageError::UnknownPointer {
            backend: BACKEND,
            ptr: ptr.0,
            bytes,
        };
        let live = self.lock();
        let (&start, found) = live.range(..=ptr.0).next_back().ok_or(unknown.clone())?;
        let offset = ptr.0 - start;
        if offset
            .checked_add(bytes)
            .is_none_or(|end| end > found.bytes)
        {
            return Err(unknown);
        }
        let handle = found.handle.clone();
        drop(live);
        let stream = self.device.stream_of(&handle).map_err(to_storage)?;
        let whole = stream.view(&handle).map_err(to_storage)?;
        let view = StorageHandle {
            id: whole.id,
            utilization: StorageUtilization {
                offset: whole.offset() + offset,
                size: bytes,
            },
        };
        Ok((stream, view))
    }
}

/// A facade error as the resource trait's error, keeping the numbers.
fn to_storage(err: GpuMemError) -> StorageError {
    match err {
        GpuMemError::OutOfMemory(report) => StorageError::OutOfMemory {
            backend: BACKEND,
            refused_by: report.refused_by,
            requested: report.requested,
            free: report.device_free,
            total: report.device_total,
        },
        GpuMemError::Pool(IoError::Storage(err)) | GpuMemError::Storage(err) => err,
        GpuMemError::Pool(IoError::BufferTooBig { size, max }) => StorageError::TooBig {
            backend: BACKEND,
            // The pool layout's largest allocation: no budget refused.
            refused_by: mem_storage::Refuser::Device,
            requested: size,
            max,
        },
        other => {
            tracing::warn!(%other, "gpumem refused a resource call");
            StorageError::Unsupported {
                operation: "this call on gpumem's pools (see the log for why)",
                backend: BACKEND,
            }
        }
    }
}

impl DeviceResource for PoolResource {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn allocate(&self, bytes: u64, stream: StreamId) -> Result<DevicePtr, StorageError> {
        let stream = self.stream(stream)?;
        // A zero-byte request still gets a unique address.
        let handle = stream.reserve(bytes.max(1)).map_err(to_storage)?;
        let guard = stream.device_ptr(&handle).map_err(to_storage)?;
        let ptr = guard.ptr();
        self.lock().insert(
            ptr.0,
            Live {
                handle,
                _guard: guard,
                bytes,
            },
        );
        Ok(ptr)
    }

    fn deallocate(&self, ptr: DevicePtr, bytes: u64, stream: StreamId) -> Result<(), StorageError> {
        let on = self.stream(stream)?;
        let live = self
            .lock()
            .remove(&ptr.0)
            .ok_or(StorageError::UnknownPointer {
                backend: BACKEND,
                ptr: ptr.0,
                bytes,
            })?;
        // Freed on another stream: reused only after that stream's work.
        if let Err(err) = on.record_use(&live.handle) {
            tracing::warn!(%err, "deallocation stream not recorded; freed in allocation order");
        }
        drop(live);
        Ok(())
    }

    fn alignment(&self) -> u64 {
        self.device.properties().effective_alignment()
    }

    fn mem_info(&self) -> Result<MemInfo, StorageError> {
        self.device.mem_info().map_err(to_storage)
    }

    fn holds_memory(&self) -> bool {
        self.device.shared.resource.holds_memory()
    }

    fn write(&self, dst: DevicePtr, data: &[u8], _stream: StreamId) -> Result<(), StorageError> {
        let (stream, view) = self.view(dst, data.len() as u64)?;
        stream.with_memory(|mm| mm.storage().write(&view, data))
    }

    fn read(&self, src: DevicePtr, out: &mut [u8], _stream: StreamId) -> Result<(), StorageError> {
        let (stream, view) = self.view(src, out.len() as u64)?;
        stream.with_memory(|mm| mm.storage().read(&view, out))
    }

    fn fill(
        &self,
        dst: DevicePtr,
        value: u8,
        bytes: u64,
        _stream: StreamId,
    ) -> Result<(), StorageError> {
        let (stream, view) = self.view(dst, bytes)?;
        stream.with_memory(|mm| mm.storage().fill(&view, value))
    }

    fn synchronize(&self, stream: StreamId) -> Result<(), StorageError> {
        self.stream(stream)?.synchronize().map_err(to_storage)
    }
}
