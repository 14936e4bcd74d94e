//! `Stream`'s API for memory used by more than one stream: `bind`, the
//! cursor rule (`stamp`, `get_cursor`, `must_wait`, `wait_for`) and
//! `record_use` holds. The bodies are in `cross_stream.rs`.

use mem_pools::ManagedMemoryHandle;

use super::{StreamWait, cross_stream};
use crate::error::Result;
use crate::shared::Stream;

impl Stream {
    /// Hand `reserved`'s memory to `assigned` and stamp it with the number
    /// of the next operation this stream submits (bind, then launch); returns
    /// the stamp. Memory another stream's work uses ([`Stream::record_use`])
    /// is never freed by a bind: it stays held ([`Stream::held_bytes`]) until
    /// that work completes. A refused bind changes nothing in the engine.
    ///
    /// # Errors
    /// A stale handle or one of another stream; `IoError::SharedReserved`
    /// when `reserved` has another holder (a clone, a graph's pin);
    /// `IoError::AssignedPinned` when a captured graph pins `assigned`.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let (tensor, fresh) = (stream.reserve(1024)?, stream.reserve(1024)?);
    /// let stamp = stream.bind(fresh, tensor.clone())?;
    /// assert_eq!(stream.get_cursor(&tensor)?, stamp);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn bind(
        &self,
        reserved: ManagedMemoryHandle,
        assigned: ManagedMemoryHandle,
    ) -> Result<u64> {
        cross_stream::bind(self, reserved, assigned)
    }

    /// Stamp `handle` for the next operation without moving memory
    /// (`bind` of a handle to itself).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(64)?;
    /// assert_eq!(stream.stamp(&buffer)?, 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn stamp(&self, handle: &ManagedMemoryHandle) -> Result<u64> {
        self.bind(handle.clone(), handle.clone())
    }

    /// The stamp of `handle`'s last `bind` (0 if never bound), read on the
    /// stream that reserved it.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(64)?;
    /// assert_eq!(stream.get_cursor(&buffer)?, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn get_cursor(&self, handle: &ManagedMemoryHandle) -> Result<u64> {
        cross_stream::get_cursor(self, handle)
    }

    /// Whether this stream must wait before using `handle`: `Some` when the
    /// operation it was last bound for, on the stream that owns it, was
    /// submitted and is not known complete; `None` on its own stream.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let (buffer, other) = (stream.reserve(64)?, device.stream(1)?);
    /// stream.stamp(&buffer)?;
    /// stream.submit();
    /// assert!(other.must_wait(&buffer)?.is_some());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn must_wait(&self, handle: &ManagedMemoryHandle) -> Result<Option<StreamWait>> {
        cross_stream::must_wait(self, handle)
    }

    /// Order this stream's later work after `wait`'s stream's work (CUDA: an
    /// event recorded there, waited here; nothing to order on in-order
    /// backends).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let (buffer, other) = (stream.reserve(64)?, device.stream(1)?);
    /// stream.stamp(&buffer)?;
    /// stream.submit();
    /// if let Some(wait) = other.must_wait(&buffer)? {
    ///     other.wait_for(wait)?;
    /// }
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn wait_for(&self, wait: StreamWait) -> Result<()> {
        cross_stream::wait_for(self, wait)
    }

    /// Record that work on this stream uses `handle` (reserved on another
    /// stream), like PyTorch's `record_stream`: its memory is not reused
    /// until this stream completes the work submitted when the handle's last
    /// holder drops. No-op on its own stream.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let (buffer, other) = (stream.reserve(4096)?, device.stream(1)?);
    /// other.record_use(&buffer)?;
    /// let op = other.submit();
    /// drop(buffer);
    /// assert_eq!(stream.held_bytes(), 4096); // until `op` completes
    /// other.complete_through(op)?;
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn record_use(&self, handle: &ManagedMemoryHandle) -> Result<()> {
        cross_stream::record_use(self, handle)
    }

    /// Bytes whose handles were dropped but that this stream still holds
    /// for other streams' unfinished work.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(stream.held_bytes(), 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn held_bytes(&self) -> u64 {
        self.shared().lock().held_bytes()
    }
}
