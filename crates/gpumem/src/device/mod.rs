//! `Device`: its streams, configuration, synchronize and persistent
//! windows here; the rest of its public API by idea beside it:
//! `constructors.rs` (a builder per backend), `observe.rs` (budget,
//! statistics, report), `moves.rs` (relocation, reclaim, sleep/wake).
//!
//! A device is a backend, a budget, and one pool engine per stream. Built
//! with [`DeviceBuilder`]: pick the backend ([`Device::host`],
//! [`Device::simulated`], [`Device::cuda`]), set what differs from the
//! defaults, and [`DeviceBuilder::build`]. What the streams share, and the
//! one door to a stream's engine, is `shared/device_shared.rs`; the bodies
//! that take more than a few lines live beside: `builder.rs`, `sleep.rs`,
//! `report.rs`; `pool_resource.rs` is the RMM-style resource over a device.

mod builder;
mod constructors;
mod moves;
mod observe;
mod pool_resource;
mod report;
mod sleep;

use mem_pools::{ManagedMemoryHandle, MemoryDeviceProperties};

use crate::config::GpumemConfig;
use crate::error::{GpuMemError, Result};
use crate::stream::{PersistentWindow, Stream};

pub use crate::backend::{BudgetedResource, DeviceStorage, StreamMemory};
pub use crate::shared::Device;
pub use builder::DeviceBuilder;
pub use pool_resource::PoolResource;

/// The cudarc the CUDA backend is built on (to bring a context and streams).
pub use cudarc;

impl Device {
    /// `"<backend>:<ordinal>"`, e.g. `"host:0"`.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(device.name(), "host:0");
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The configuration the device was built with (after `GPUMEM_CONF`).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(device.config().streams, 2);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn config(&self) -> &GpumemConfig {
        &self.shared.config
    }

    /// The page limits and alignment every stream's pools use.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert!(device.properties().alignment > 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn properties(&self) -> &MemoryDeviceProperties {
        &self.shared.properties
    }

    /// Number of streams.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(device.stream_count(), 2);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn stream_count(&self) -> usize {
        self.shared.streams.len()
    }

    /// Stream `index`.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(device.stream(1)?.index(), 1);
    /// assert!(device.stream(2).is_err());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn stream(&self, index: usize) -> Result<Stream> {
        if index < self.shared.streams.len() {
            Ok(Stream::new(self.shared.clone(), index))
        } else {
            Err(GpuMemError::unknown_stream(
                index,
                self.shared.streams.len(),
            ))
        }
    }

    /// Stream 0, the default stream.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(device.default_stream().index(), 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn default_stream(&self) -> Stream {
        Stream::new(self.shared.clone(), 0)
    }

    /// Every stream, in index order.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(device.streams().len(), 2);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn streams(&self) -> Vec<Stream> {
        (0..self.shared.streams.len())
            .map(|i| Stream::new(self.shared.clone(), i))
            .collect()
    }

    /// The stream that reserved `handle`.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = device.stream(1)?.reserve(64)?;
    /// assert_eq!(device.stream_of(&buffer)?.index(), 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn stream_of(&self, handle: &ManagedMemoryHandle) -> Result<Stream> {
        Ok(Stream::new(self.shared.clone(), self.shared.owner(handle)?))
    }

    /// Wait for every stream's work and mark all of it complete.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// stream.submit();
    /// device.synchronize()?;
    /// assert_eq!(stream.completed(), 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        self.shared
            .waits
            .count(crate::stats::waits::WaitSource::Synchronize);
        for stream in self.streams() {
            stream.synchronize()?;
        }
        Ok(())
    }

    /// Persistent mode on every stream until the guard drops (see
    /// [`Stream::persistent`]).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let _weights = {
    ///     let _window = device.persistent();
    ///     stream.reserve(MIB)?
    /// };
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn persistent(&self) -> PersistentWindow {
        let streams = (0..self.shared.streams.len()).collect();
        PersistentWindow::open(self.shared.clone(), streams)
    }

    /// Process the handles dropped on any thread since each stream's last
    /// call, so [`Device::stats`] and [`Device::memory_report`] are current.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// drop(stream.reserve(64)?);
    /// device.drain();
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn drain(&self) {
        for index in 0..self.shared.streams.len() {
            self.shared.drain_stream(index);
        }
    }
}
