//! Guards a runtime holds instead of remembering to undo a call: a device
//! address that stays valid while its guard lives, a persistent-allocation
//! window that closes when its guard drops.
//!
//! Why guards: a raw address handed to a kernel must not move while the
//! kernel may use it, and forgetting `release_raw` pins memory for good; a
//! persistent window left open routes every later reservation to exact-fit
//! pages. Both end with the guard's drop, on any thread, in any order.

use std::sync::Arc;

use mem_pools::{ManagedMemoryHandle, MemoryAllocationMode, RawPin};
use mem_storage::DevicePtr;

use super::out_of_memory::access;
use crate::error::Result;
use crate::shared::{DeviceShared, Stream};

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

/// [`Stream::device_ptr`]: pin `handle`'s memory and read its address on
/// the stream that owns it (the owner's `get_resource` / `release_raw` flag
/// is untouched: each guard is a pin of its own).
pub(crate) fn device_ptr(stream: &Stream, handle: &ManagedMemoryHandle) -> Result<DevicePtrGuard> {
    let owner = stream.device.owner(handle)?;
    let (view, pin) = access(stream, owner, |st| {
        st.engine.get_resource_pinned(handle.binding(), None, None)
    })?;
    Ok(DevicePtrGuard {
        ptr: view.ptr,
        len: handle.size(),
        _pin: pin,
    })
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
    pub(crate) fn open(device: Arc<DeviceShared>, streams: Vec<usize>) -> Self {
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
