//! The handle types a user holds. Their public methods live in one file
//! each: `device/mod.rs` for [`Device`], `stream/mod.rs` for [`Stream`],
//! `device/builder.rs` for [`crate::device::DeviceBuilder`]; their
//! crate-private constructors are there too.

use std::sync::Arc;

use super::device_shared::DeviceShared;

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
