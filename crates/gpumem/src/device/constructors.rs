//! Where a `Device` starts: the builder for each backend (host memory,
//! the simulated device, CUDA by ordinal or from a context).

use std::sync::Arc;

use super::DeviceBuilder;
use crate::backend::Backend;
use crate::error::Result;
use crate::shared::Device;

impl Device {
    /// Real host memory standing in for a device: the embedded default, and
    /// what every test runs on.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let device = Device::host().ignore_env().build()?;
    /// assert_eq!(device.name(), "host:0");
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn host() -> DeviceBuilder {
        DeviceBuilder::new(Backend::Host { capacity: None })
    }

    /// Host memory that refuses to hold more than `capacity` bytes at once,
    /// like a device of that size.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let device = Device::host_with_capacity(64 * MIB).ignore_env().build()?;
    /// assert_eq!(device.mem_info()?.total, 64 * MIB);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn host_with_capacity(capacity: u64) -> DeviceBuilder {
        DeviceBuilder::new(Backend::Host {
            capacity: Some(capacity),
        })
    }

    /// A simulated device of `capacity` bytes: addresses and accounting, no
    /// memory, so workloads larger than this machine can be planned.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let device = Device::simulated(80 * GIB).ignore_env().build()?;
    /// assert_eq!(device.mem_info()?.total, 80 * GIB);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn simulated(capacity: u64) -> DeviceBuilder {
        DeviceBuilder::new(Backend::Simulated { capacity })
    }

    /// CUDA device `ordinal`.
    ///
    /// # Errors
    /// [`crate::GpuMemError::CudaUnavailable`] when the CUDA driver cannot be loaded
    /// (checked before anything touches it) or the device cannot be opened.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// if let Ok(builder) = Device::cuda(0) {
    ///     let _device = builder.ignore_env().build()?;
    /// }
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn cuda(ordinal: usize) -> Result<DeviceBuilder> {
        Backend::cuda(ordinal).map(DeviceBuilder::new)
    }

    /// A device on a runtime's own CUDA context (bring your own CUDA):
    /// gpumem allocates in it, beside the runtime's kernels and modules.
    /// Give the runtime's streams with [`DeviceBuilder::cuda_streams`].
    ///
    /// # Errors
    /// [`crate::GpuMemError::CudaUnavailable`] when the context's memory cannot be
    /// read.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// if gpumem::storage::cuda_available() {
    ///     let ctx = gpumem::device::cudarc::driver::CudaContext::new(0).expect("a GPU");
    ///     let _device = Device::cuda_from_context(ctx)?.ignore_env().build()?;
    /// }
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn cuda_from_context(ctx: Arc<cudarc::driver::CudaContext>) -> Result<DeviceBuilder> {
        Backend::cuda_context(ctx).map(DeviceBuilder::new)
    }
}
