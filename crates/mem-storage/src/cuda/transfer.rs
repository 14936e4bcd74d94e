//! Moving bytes on a CUDA device, on a stream, between checked ranges.
//!
//! Every range is checked against the live allocations first, so a stale
//! or overrunning view is [`StorageError::UnknownPointer`] rather than a
//! driver fault or a write into a neighbour. The map stays locked from the
//! check until the work is queued (and, for host transfers, done), so a
//! `deallocate` on another thread cannot free the range in between (lock
//! order: the live map, then the stream registry, which is only read). Host transfers (`write`,
//! `read`) wait for their stream, since the host buffer is only borrowed
//! for the call; device work (`fill`, `copy`) is only queued, in order on
//! the stream, and completes before anything queued after it there.

use std::collections::BTreeMap;

use cudarc::driver::result;

use crate::cuda::driver;
use crate::cuda::resource::{BACKEND, CudaResource};
use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};

/// Check that `ptr..ptr+len` lies inside one live allocation.
fn check_range(live: &BTreeMap<u64, u64>, ptr: DevicePtr, len: u64) -> Result<(), StorageError> {
    let unknown = || StorageError::UnknownPointer {
        backend: BACKEND,
        ptr: ptr.0,
        bytes: len,
    };
    let (&base, &bytes) = live.range(..=ptr.0).next_back().ok_or_else(unknown)?;
    match (ptr.0 - base).checked_add(len) {
        Some(end) if end <= bytes => Ok(()),
        _ => Err(unknown()),
    }
}

impl CudaResource {
    /// Refuse a host transfer or a synchronize on a stream a CUDA graph is
    /// capturing: the copy would become a node of the graph (reading a
    /// host buffer long gone when it replays) and the wait would
    /// invalidate the capture (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`).
    pub(crate) fn not_capturing(&self, s: &cudarc::driver::CudaStream) -> Result<(), StorageError> {
        use cudarc::driver::sys::CUstreamCaptureStatus;
        if s.cu_stream().is_null() {
            return Ok(()); // the legacy default stream is never captured
        }
        let status = s
            .capture_status()
            .map_err(driver("querying a stream's capture"))?;
        match status {
            CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE => Ok(()),
            _ => Err(StorageError::Unsupported {
                operation: "a host transfer or synchronize on a stream a CUDA graph is capturing",
                backend: BACKEND,
            }),
        }
    }

    pub(crate) fn write_bytes(
        &self,
        dst: DevicePtr,
        data: &[u8],
        stream: StreamId,
    ) -> Result<(), StorageError> {
        let live = self.lock();
        check_range(&live, dst, data.len() as u64)?;
        let s = self.cuda_stream(stream)?;
        if data.is_empty() {
            return Ok(());
        }
        self.not_capturing(&s)?;
        self.bind()?;
        // SAFETY: `dst..+len` lies inside a live allocation of this context
        // (checked above; `live` stays locked until the copy is done, so no
        // other thread frees it meanwhile); `data` stays borrowed until the
        // stream is synchronized below, so the asynchronous copy never
        // outlives it.
        unsafe { result::memcpy_htod_async(dst.0, data, s.cu_stream()) }
            .map_err(driver("copying host to device"))?;
        s.synchronize()
            .map_err(driver("waiting for a host-to-device copy"))
    }

    pub(crate) fn read_bytes(
        &self,
        src: DevicePtr,
        out: &mut [u8],
        stream: StreamId,
    ) -> Result<(), StorageError> {
        let live = self.lock();
        check_range(&live, src, out.len() as u64)?;
        let s = self.cuda_stream(stream)?;
        if out.is_empty() {
            return Ok(());
        }
        self.not_capturing(&s)?;
        self.bind()?;
        // SAFETY: the source range is inside a live allocation (checked, and
        // kept so by holding `live` until the copy is done);
        // `out` is exclusively borrowed until the stream is synchronized
        // below, so nothing else observes it while the copy runs.
        unsafe { result::memcpy_dtoh_async(out, src.0, s.cu_stream()) }
            .map_err(driver("copying device to host"))?;
        s.synchronize()
            .map_err(driver("waiting for a device-to-host copy"))
    }

    pub(crate) fn fill_bytes(
        &self,
        dst: DevicePtr,
        value: u8,
        bytes: u64,
        stream: StreamId,
    ) -> Result<(), StorageError> {
        let live = self.lock();
        check_range(&live, dst, bytes)?;
        let s = self.cuda_stream(stream)?;
        if bytes == 0 {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: the range is inside a live allocation of this context
        // (checked while `live` is held, until the memset is queued, so no
        // free on another thread comes between);
        // the memset is ordered on `s` after earlier work there. `bytes`
        // fits in usize: it is bounded by a live allocation's size.
        unsafe { result::memset_d8_async(dst.0, value, bytes as usize, s.cu_stream()) }
            .map_err(driver("filling device memory"))
    }

    pub(crate) fn copy_bytes(
        &self,
        src: DevicePtr,
        dst: DevicePtr,
        bytes: u64,
        stream: StreamId,
    ) -> Result<(), StorageError> {
        let live = self.lock();
        check_range(&live, src, bytes)?;
        check_range(&live, dst, bytes)?;
        // Both ranges are inside live allocations, so the sums cannot overflow.
        if src.0 < dst.0 + bytes && dst.0 < src.0 + bytes && bytes > 0 && src != dst {
            return Err(StorageError::InvalidArgument {
                parameter: "copy length (source and destination overlap)",
                value: bytes,
                expected: "disjoint ranges: the driver's copies do not handle overlap; stage through a separate allocation",
            });
        }
        let s = self.cuda_stream(stream)?;
        if bytes == 0 || src == dst {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: both ranges lie inside live allocations of this context
        // (checked while `live` is held, until the copy is queued, so no
        // free on another thread comes between) and do not overlap (checked
        // above); the copy is ordered on `s`.
        unsafe { result::memcpy_dtod_async(dst.0, src.0, bytes as usize, s.cu_stream()) }
            .map_err(driver("copying device to device"))
    }
}
