//! `LaunchGuard`: a launch on a stream, with the device's moving lock held
//! shared from the moment its buffers' uses are recorded until its work is
//! counted ([`LaunchGuard::submit`]). See `shared/moving.rs` for why.

use mem_pools::ManagedMemoryHandle;
use mem_storage::StorageHandle;

use super::cross_stream::record_use;
use super::guards::{DevicePtrGuard, device_ptr};
use super::out_of_memory::on_owner;
use crate::error::Result;
use crate::shared::Stream;
use crate::shared::moving::Launching;

/// A launch in progress on a stream (from [`Stream::launch`]): no memory
/// of the device moves while it lives, so the addresses read through it
/// ([`LaunchGuard::view`], [`LaunchGuard::device_ptr`]) are the ones the
/// work uses. Enqueue the work, then [`LaunchGuard::submit`] counts it;
/// dropping the guard instead launches nothing.
///
/// Not `Send`: the lock is the launching thread's. On that thread, a call
/// that moves memory on the same device (relocate, reclaim, sleep, a
/// capture's begin) is refused with `GpuMemError::LaunchOpen` while the
/// guard lives, and a reservation does not relocate.
#[derive(Debug)]
#[must_use = "submit the launch once its work is enqueued"]
pub struct LaunchGuard<'a> {
    stream: &'a Stream,
    _moving: Launching<'a>,
}

/// [`Stream::launch`]: take the moving lock shared, then record that this
/// stream's next operation uses each of `buffers` that another stream owns.
pub(crate) fn launch<'a>(
    stream: &'a Stream,
    buffers: &[&ManagedMemoryHandle],
) -> Result<LaunchGuard<'a>> {
    let moving = stream.device.moving.shared()?;
    for buffer in buffers {
        record_use(stream, buffer)?;
    }
    Ok(LaunchGuard {
        stream,
        _moving: moving,
    })
}

impl LaunchGuard<'_> {
    /// The stream launched on.
    pub fn stream(&self) -> &Stream {
        self.stream
    }

    /// The storage view of `handle`'s memory, valid for this launch.
    ///
    /// # Errors
    /// As [`Stream::view`].
    pub fn view(&self, handle: &ManagedMemoryHandle) -> Result<StorageHandle> {
        on_owner(self.stream, handle, |st, binding| {
            st.engine.get_storage(binding)
        })
    }

    /// The device address of `handle`'s memory, pinned while the returned
    /// guard lives (it may outlive the launch).
    ///
    /// # Errors
    /// As [`Stream::device_ptr`].
    pub fn device_ptr(&self, handle: &ManagedMemoryHandle) -> Result<DevicePtrGuard> {
        device_ptr(self.stream, handle)
    }

    /// Count the launched work as the stream's next operation, release the
    /// lock, and return the operation's number (as [`Stream::submit`]).
    pub fn submit(self) -> u64 {
        self.stream.submit()
    }
}
