//! `BudgetDevice`: the device a manager allocates on.
//!
//! The xlog-compatible `GpuMemoryManager` API takes an `Arc<CudaDevice>`. gpumem runs the same manager on
//! the host backend (no GPU), a simulated device, or CUDA, so a device here
//! is a named, numbered [`DeviceResource`] — the bottom of the resource
//! stack. Cloning a device shares it; two devices built separately are
//! different devices even over equal resources, which is what overlay
//! validation compares.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mem_storage::{DeviceResource, HostResource, SimulatedResource};

use crate::error::{BudgetError, Result};

static NEXT_DEVICE_ID: AtomicU64 = AtomicU64::new(1);

/// A device: a backend resource with a name and an ordinal.
#[derive(Clone)]
pub struct BudgetDevice {
    resource: Arc<dyn DeviceResource>,
    kind: &'static str,
    ordinal: usize,
    id: u64,
}

impl fmt::Debug for BudgetDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BudgetDevice")
            .field("name", &self.name())
            .field("backend", &self.resource.backend())
            .finish()
    }
}

impl BudgetDevice {
    /// Host memory standing in for a device (the embedded default).
    pub fn host() -> Self {
        Self::from_resource("host", 0, Arc::new(HostResource::new()))
    }

    /// Host memory capped at `capacity` bytes, like a device of that size.
    pub fn host_with_capacity(capacity: u64) -> Self {
        Self::from_resource("host", 0, Arc::new(HostResource::with_capacity(capacity)))
    }

    /// A simulated device of `capacity` bytes: addresses without memory, so
    /// budgets for workloads larger than this machine can be exercised.
    pub fn simulated(capacity: u64) -> Self {
        Self::from_resource("sim", 0, Arc::new(SimulatedResource::new(capacity)))
    }

    /// CUDA device `ordinal`.
    ///
    /// # Errors
    /// [`BudgetError::DeviceUnavailable`] when the CUDA driver library cannot
    /// be loaded (checked before anything touches the driver, which would
    /// panic otherwise) or the device cannot be opened.
    pub fn cuda(ordinal: usize) -> Result<Self> {
        if !mem_storage::cuda_available() {
            return Err(BudgetError::DeviceUnavailable {
                reason: format!(
                    "cuda:{ordinal}: the CUDA driver library (libcuda) cannot be loaded on this machine; \
                     use BudgetDevice::host() or install the NVIDIA driver"
                ),
            });
        }
        crate::cuda::open(ordinal).map(|resource| Self::from_resource("cuda", ordinal, resource))
    }

    /// A device over any resource (a custom backend, or a test double).
    pub fn from_resource(
        kind: &'static str,
        ordinal: usize,
        resource: Arc<dyn DeviceResource>,
    ) -> Self {
        Self {
            resource,
            kind,
            ordinal,
            id: NEXT_DEVICE_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The backend resource at the bottom of every stack on this device.
    pub fn resource(&self) -> &Arc<dyn DeviceResource> {
        &self.resource
    }

    /// `"<kind>:<ordinal>"`, e.g. `"cuda:0"`.
    pub fn name(&self) -> String {
        format!("{}:{}", self.kind, self.ordinal)
    }

    /// The device's ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// Whether `other` is this device (a clone of it), not merely alike.
    pub fn same_device(&self, other: &BudgetDevice) -> bool {
        self.id == other.id
    }
}
