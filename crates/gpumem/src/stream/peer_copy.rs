//! The machinery of [`Stream::copy_to_peer`](super::Stream::copy_to_peer):
//! a copy from a buffer of one device to a buffer of another, ordered on
//! both streams.
//!
//! On CUDA the copy is `cuMemcpyPeerAsync` on the source stream, fenced by
//! two events: the source stream first waits for the work queued on the
//! destination stream (which may still use the destination), and the
//! destination stream then waits for the copy. Each stream counts the
//! copy as one operation, inside a launch on each device, so neither
//! buffer moves or is reused under it: the source's reuse waits for the
//! source stream, the destination's for the destination stream, which
//! waits for the copy. The driver stages the bytes through the host when
//! the devices have no peer link, so no grant is needed.
//!
//! Off CUDA the bytes go through host memory: a read, then a write.

use mem_pools::ManagedMemoryHandle;
use mem_storage::StorageError;

use crate::error::{GpuMemError, Result};
use crate::shared::Stream;
use cudarc::driver::{CudaStream, DriverError, sys};

/// [`Stream::copy_to_peer`].
pub(crate) fn copy(
    src_stream: &Stream,
    src: &ManagedMemoryHandle,
    dst_stream: &Stream,
    dst: &ManagedMemoryHandle,
) -> Result<()> {
    let refuse = |reason: String| GpuMemError::Peer {
        operation: "copy_to_peer",
        device: src_stream.device.name.clone(),
        peer: dst_stream.device.name.clone(),
        reason,
    };
    // Each buffer must be its stream's device's: ForeignHandle otherwise.
    src_stream.device.owner(src)?;
    dst_stream.device.owner(dst)?;
    let bytes = src.size();
    if dst.size() < bytes {
        return Err(refuse(format!(
            "the destination holds {} B, fewer than the source's {bytes} B",
            dst.size()
        )));
    }
    match (src_stream.cuda_stream(), dst_stream.cuda_stream()) {
        (Some(a), Some(b)) => on_cuda(src_stream, src, dst_stream, dst, (&a, &b)),
        (None, None) => {
            let mut staged = vec![0u8; bytes as usize];
            src_stream.read(src, &mut staged)?;
            dst_stream.write(dst, &staged)
        }
        _ => Err(refuse(
            "one device is CUDA and the other is not: read into host memory, then write".into(),
        )),
    }
}

fn on_cuda(
    src_stream: &Stream,
    src: &ManagedMemoryHandle,
    dst_stream: &Stream,
    dst: &ManagedMemoryHandle,
    (a, b): (&CudaStream, &CudaStream),
) -> Result<()> {
    let failed = |operation: &'static str| {
        move |source: DriverError| GpuMemError::Storage(StorageError::Driver { operation, source })
    };
    let same_device = std::sync::Arc::ptr_eq(&src_stream.device, &dst_stream.device);
    // One launch per device: a second launch of the same device on this
    // thread is refused (it could wait for itself).
    let src_launch = match same_device {
        true => src_stream.launch(&[src, dst])?,
        false => src_stream.launch(&[src])?,
    };
    let dst_launch = match same_device {
        true => None,
        false => Some(dst_stream.launch(&[dst])?),
    };
    let from = src_launch.device_ptr(src)?;
    let to = match &dst_launch {
        Some(launch) => launch.device_ptr(dst)?,
        None => src_launch.device_ptr(dst)?,
    };
    let queued = b
        .record_event(None)
        .map_err(failed("recording the destination stream's work"))?;
    a.wait(&queued)
        .map_err(failed("ordering a peer copy after the destination's work"))?;
    a.context()
        .bind_to_thread()
        .map_err(failed("binding the source device"))?;
    // SAFETY: both spans are live memory of their devices, pinned by the
    // guards above for as long as the launches live, and `bytes` fits both
    // (checked by the caller); the copy is ordered after the destination's
    // queued work and before its later work by the two events.
    unsafe {
        sys::cuMemcpyPeerAsync(
            to.as_raw(),
            b.context().cu_ctx(),
            from.as_raw(),
            a.context().cu_ctx(),
            src.size() as usize,
            a.cu_stream(),
        )
    }
    .result()
    .map_err(failed("copying between devices"))?;
    let copied = a
        .record_event(None)
        .map_err(failed("recording a peer copy"))?;
    b.wait(&copied)
        .map_err(failed("ordering the destination after a peer copy"))?;
    src_launch.submit();
    if let Some(launch) = dst_launch {
        launch.submit();
    }
    Ok(())
}
