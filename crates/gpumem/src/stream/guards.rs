//! Guards a runtime holds instead of remembering to undo a call: a device
//! address that stays valid while its guard lives, a persistent-allocation
//! window that closes when its guard drops, and `drain` to make statistics
//! current without a dummy call.
//!
//! Why guards: a raw address handed to a kernel must not move while the
//! kernel may use it, and forgetting `release_raw` pins memory for good; a
//! persistent window left open routes every later reservation to exact-fit
//! pages. Both end with the guard's drop, on any thread, in any order.

use std::sync::Arc;

use mem_pools::{ManagedMemoryHandle, MemoryAllocationMode, RawPin};
use mem_storage::DevicePtr;

use crate::device::{Device, DeviceShared};
use crate::error::Result;
use crate::stream::Stream;

/// A device address of an allocation, valid while the guard lives: the
/// memory never moves under it (relocation and compaction skip it; arenas
/// never move anything) and the guard's drop releases its pin, on any
/// thread. Taking one is [`Stream::device_ptr`].
#[derive(Debug)]
pub struct DevicePtrGuard {
    ptr: DevicePtr,
    len: u64,
    _pin: RawPin,
}

impl DevicePtrGuard {
    /// The address (on CUDA, a `CUdeviceptr`).
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// The address as the driver's integer (`CUdeviceptr`).
    pub fn as_raw(&self) -> u64 {
        self.ptr.0
    }

    /// Bytes the allocation was asked for.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the allocation is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Stream {
    /// The device address of `handle`'s memory, pinned while the returned
    /// guard lives (read on the stream that owns the handle). The owner's
    /// `get_resource` / `release_raw` flag is untouched: each guard is a
    /// pin of its own.
    ///
    /// While the device sleeps ([`Device::sleep`]) the address is handed
    /// out as it will be after `wake` (addresses never change) but holds no
    /// memory until then.
    ///
    /// # Errors
    /// A stale or foreign handle; the storage's error when the memory cannot
    /// be reached. A lazy buffer whose memory cannot be mapped now is
    /// retried once after cached memory is given back, then is
    /// [`crate::GpuMemError::OutOfMemory`] (as in [`Stream::view`]). Nothing
    /// is pinned on error.
    pub fn device_ptr(&self, handle: &ManagedMemoryHandle) -> Result<DevicePtrGuard> {
        let owner = self.device.owner(handle)?;
        let (view, pin) = self.access(owner, |st| {
            st.engine.get_resource_pinned(handle.binding(), None, None)
        })?;
        Ok(DevicePtrGuard {
            ptr: view.ptr,
            len: handle.size(),
            _pin: pin,
        })
    }

    /// Persistent mode on this stream until the guard drops (weights,
    /// graph memory: exact-fit pages that are never relocated). Windows
    /// nest; `mode` remains for callers that manage the window themselves.
    pub fn persistent(&self) -> PersistentWindow {
        PersistentWindow::open(self.device.clone(), vec![self.index])
    }

    /// Process the handles dropped on any thread since this stream's last
    /// call, so its statistics and reports are current.
    pub fn drain(&self) {
        let pending = self.shared().lock().engine.has_pending_drops();
        if pending {
            self.device.run(self.index, |st| st.engine.drain_drops());
        }
    }

    /// The CUDA stream this stream's memory is ordered on (the runtime's
    /// own when it gave them, see [`crate::DeviceBuilder::cuda_streams`]);
    /// `None` off CUDA. `.cu_stream()` is the raw `CUstream`.
    pub fn cuda_stream(&self) -> Option<Arc<cudarc::driver::CudaStream>> {
        let cuda = self.device.cuda.as_ref()?;
        cuda.cuda_stream(self.id()).ok()
    }
}

impl Device {
    /// Persistent mode on every stream until the guard drops (see
    /// [`Stream::persistent`]).
    pub fn persistent(&self) -> PersistentWindow {
        let streams = (0..self.shared.streams.len()).collect();
        PersistentWindow::open(self.shared.clone(), streams)
    }

    /// Process the handles dropped on any thread since each stream's last
    /// call, so [`Device::stats`] and [`Device::memory_report`] are current.
    pub fn drain(&self) {
        for (index, stream) in self.shared.streams.iter().enumerate() {
            // Reading statistics drains: a stream with nothing dropped
            // (most reads, in a replay loop) costs a lock and a load.
            let pending = stream.lock().engine.has_pending_drops();
            if pending {
                self.shared.run(index, |st| st.engine.drain_drops());
            }
        }
    }
}

/// An open persistent-allocation window on some streams; dropping it closes
/// the window (`MemoryAllocationMode::Auto` again, once nested windows
/// close too).
#[derive(Debug)]
#[must_use = "the window closes when the guard drops"]
pub struct PersistentWindow {
    device: Arc<DeviceShared>,
    streams: Vec<usize>,
}

impl PersistentWindow {
    fn open(device: Arc<DeviceShared>, streams: Vec<usize>) -> Self {
        for &index in &streams {
            device.run(index, |st| st.engine.mode(MemoryAllocationMode::Persistent));
        }
        Self { device, streams }
    }
}

impl Drop for PersistentWindow {
    fn drop(&mut self) {
        for &index in &self.streams {
            self.device
                .run(index, |st| st.engine.mode(MemoryAllocationMode::Auto));
        }
    }
}
