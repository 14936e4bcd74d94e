//! `Stream`'s API for reaching a buffer's bytes: its storage view, host
//! reads and writes, and a device pointer that keeps it from moving.

use mem_pools::ManagedMemoryHandle;
use mem_storage::StorageHandle;

use super::{DevicePtrGuard, guards, out_of_memory};
use crate::error::Result;
use crate::shared::Stream;

impl Stream {
    /// The storage view of `handle`'s memory (page id, offset, size); take a
    /// fresh one after a relocation.
    ///
    /// # Errors
    /// A stale or foreign handle; a lazy page's first touch refused twice
    /// (once more after cached memory is given back) is
    /// [`crate::GpuMemError::OutOfMemory`].
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(64)?;
    /// assert_eq!(stream.view(&buffer)?.size(), 64);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn view(&self, handle: &ManagedMemoryHandle) -> Result<StorageHandle> {
        out_of_memory::on_owner(self, handle, |st, binding| st.engine.get_storage(binding))
    }

    /// Write `data` at the start of `handle`'s memory (on its own stream).
    ///
    /// # Errors
    /// As [`Stream::view`], and data longer than the allocation.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(64)?;
    /// stream.write(&buffer, &[1, 2, 3])?;
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn write(&self, handle: &ManagedMemoryHandle, data: &[u8]) -> Result<()> {
        out_of_memory::on_owner(self, handle, |st, binding| st.engine.write(binding, data))
    }

    /// Read the first `out.len()` bytes of `handle`'s memory.
    ///
    /// # Errors
    /// As [`Stream::view`], and a buffer longer than the allocation.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(64)?;
    /// stream.write(&buffer, &[1, 2, 3])?;
    /// let mut out = [0; 3];
    /// stream.read(&buffer, &mut out)?;
    /// assert_eq!(out, [1, 2, 3]);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn read(&self, handle: &ManagedMemoryHandle, out: &mut [u8]) -> Result<()> {
        out_of_memory::on_owner(self, handle, |st, binding| st.engine.read(binding, out))
    }

    /// The device address of `handle`'s memory, pinned (never moved) while
    /// the guard lives. While the device sleeps the address is the one it
    /// will have after `wake`.
    ///
    /// # Errors
    /// As [`Stream::view`]; nothing is pinned on error.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(64)?;
    /// let ptr = stream.device_ptr(&buffer)?; // pinned until dropped
    /// assert_eq!(ptr.len(), 64);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn device_ptr(&self, handle: &ManagedMemoryHandle) -> Result<DevicePtrGuard> {
        guards::device_ptr(self, handle)
    }
}
