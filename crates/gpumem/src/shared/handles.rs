//! The handle types a user holds. Their public methods live in one file
//! each: `device/mod.rs` for [`Device`], `stream/mod.rs` for [`Stream`],
//! `device/builder.rs` for [`crate::device::DeviceBuilder`].

use std::sync::Arc;

use super::device_shared::DeviceShared;
use super::stream_state::StreamShared;

/// A device: its budgeted memory and its streams. Cheap to clone (shared).
///
/// Built with [`crate::device::DeviceBuilder`] from [`Device::host`],
/// [`Device::simulated`] or [`Device::cuda`].
#[derive(Debug, Clone)]
pub struct Device {
    pub(crate) shared: Arc<DeviceShared>,
}

/// One stream of a [`Device`], with its own pools and operation counter.
/// Cheap to clone; `Send + Sync`.
///
/// A runtime submits work to a stream in order; gpumem does not launch
/// anything, it only needs to know *how far* each stream got: each stream
/// counts operations ([`Stream::submit`] adds one),
/// and [`Stream::complete_through`] / [`Stream::synchronize`] say which
/// have finished.
#[derive(Debug, Clone)]
pub struct Stream {
    pub(crate) device: Arc<DeviceShared>,
    pub(crate) index: usize,
}

impl Device {
    pub(crate) fn new(shared: Arc<DeviceShared>) -> Self {
        Self { shared }
    }
}

impl Stream {
    pub(crate) fn new(device: Arc<DeviceShared>, index: usize) -> Self {
        Self { device, index }
    }

    /// This stream's shared state on its device.
    pub(crate) fn shared(&self) -> &StreamShared {
        &self.device.streams[self.index]
    }
}
