//! `DeviceResource`: raw, stream-ordered device allocation.
//!
//! This is the layer the device resource stack is made of (RMM's
//! `device_memory_resource`): a backend at the bottom (host, simulated,
//! CUDA), adaptors above it (logging, statistics, tracking, fault injection,
//! and mem-budget's `GlobalDeviceBudget`). Every method takes `&self`, so one
//! resource can be shared by every user of a device behind an `Arc`.
//!
//! Besides allocation, a resource can move bytes (`write`, `read`, `fill`,
//! `copy`): that is what lets one page allocator, one relocation engine and
//! one test suite serve every backend. A backend that holds no bytes (the
//! simulated device) answers those with [`StorageError::Unsupported`] or, for
//! `copy` and `fill`, with a successful no-op — there is nothing to move.

use std::fmt;
use std::sync::Arc;

use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};

/// Free and total bytes of a device, as `cuMemGetInfo` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemInfo {
    /// Bytes that can still be allocated.
    pub free: u64,
    /// Bytes the device has in all.
    pub total: u64,
}

/// Raw, stream-ordered device memory.
///
/// Contract for implementors:
/// - `allocate` returns an address aligned to [`DeviceResource::alignment`]
///   whose `bytes` bytes are usable in stream order on `stream`; a request of
///   0 bytes succeeds with a unique address. Failure is a typed error, never a
///   panic or abort: out-of-memory is [`StorageError::OutOfMemory`], a request
///   the device can never hold is [`StorageError::TooBig`].
/// - `deallocate` of a pointer the resource does not own is an error that
///   changes nothing.
/// - Byte movement checks that every range lies inside one live allocation.
pub trait DeviceResource: Send + Sync + fmt::Debug {
    /// Short backend name for reports and errors (`"host"`, `"sim"`, `"cuda"`).
    fn backend(&self) -> &'static str;

    /// Allocate `bytes` bytes, usable in stream order on `stream`.
    fn allocate(&self, bytes: u64, stream: StreamId) -> Result<DevicePtr, StorageError>;

    /// Free an allocation of `bytes` bytes made by [`DeviceResource::allocate`].
    /// Stream-ordered: the memory may be reused once `stream`'s prior work is done.
    fn deallocate(&self, ptr: DevicePtr, bytes: u64, stream: StreamId) -> Result<(), StorageError>;

    /// Alignment of every address `allocate` returns, in bytes (a power of two).
    fn alignment(&self) -> u64;

    /// Free and total device bytes.
    fn mem_info(&self) -> Result<MemInfo, StorageError>;

    /// Whether this resource holds real bytes (`false` for a simulated device).
    fn holds_memory(&self) -> bool {
        true
    }

    /// Copy `data` to `dst` in stream order.
    fn write(&self, dst: DevicePtr, data: &[u8], stream: StreamId) -> Result<(), StorageError> {
        let _ = (dst, data, stream);
        Err(StorageError::Unsupported {
            operation: "write",
            backend: self.backend(),
        })
    }

    /// Copy `out.len()` bytes from `src` into `out`; waits for `stream`'s prior work.
    fn read(&self, src: DevicePtr, out: &mut [u8], stream: StreamId) -> Result<(), StorageError> {
        let _ = (src, out, stream);
        Err(StorageError::Unsupported {
            operation: "read",
            backend: self.backend(),
        })
    }

    /// Set `bytes` bytes at `dst` to `value` in stream order.
    fn fill(
        &self,
        dst: DevicePtr,
        value: u8,
        bytes: u64,
        stream: StreamId,
    ) -> Result<(), StorageError> {
        let _ = (dst, value, bytes, stream);
        Err(StorageError::Unsupported {
            operation: "fill",
            backend: self.backend(),
        })
    }

    /// Copy `bytes` bytes from `src` to `dst` (device to device) in stream order.
    ///
    /// Keep the ranges disjoint: the host backend moves overlapping ranges
    /// like `memmove`, but the CUDA driver's copies do not, so the CUDA
    /// backend refuses overlap with [`StorageError::InvalidArgument`].
    fn copy(
        &self,
        src: DevicePtr,
        dst: DevicePtr,
        bytes: u64,
        stream: StreamId,
    ) -> Result<(), StorageError> {
        let _ = (src, dst, bytes, stream);
        Err(StorageError::Unsupported {
            operation: "copy",
            backend: self.backend(),
        })
    }

    /// Wait until all work queued on `stream` is complete.
    fn synchronize(&self, stream: StreamId) -> Result<(), StorageError> {
        let _ = stream;
        Ok(())
    }

    /// Make work queued on `waiter` from now on wait for all work queued on
    /// `waited` so far, without blocking the host (CUDA: record an event on
    /// `waited`, make `waiter` wait on it).
    ///
    /// Why it is here: the relocation engine orders its copy stream after
    /// every user stream through this one call, whatever the backend. The
    /// default is right for backends that complete work in call order (host,
    /// simulated); a backend with real streams must override it.
    fn stream_wait(&self, waiter: StreamId, waited: StreamId) -> Result<(), StorageError> {
        let _ = (waiter, waited);
        Ok(())
    }
}

macro_rules! forward_resource {
    ($ty:ty) => {
        impl<R: DeviceResource + ?Sized> DeviceResource for $ty {
            crate::forward_device_resource!(*: allocate, deallocate);
            crate::forward_device_resource!(*);
        }
    };
}

// Sharing: one resource stack serves every stream and every manager of a device.
forward_resource!(Arc<R>);
forward_resource!(Box<R>);
forward_resource!(&R);
