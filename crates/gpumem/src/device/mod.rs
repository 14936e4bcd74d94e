//! `Device`: every public method of a device, in this one file.
//!
//! A device is a backend, a budget, and one pool engine per stream. Built
//! with [`DeviceBuilder`]: pick the backend ([`Device::host`],
//! [`Device::simulated`], [`Device::cuda`]), set what differs from the
//! defaults, and [`DeviceBuilder::build`]. What the streams share, and the
//! one door to a stream's engine, is `shared/device_shared.rs`; the bodies
//! that take more than a few lines live beside: `builder.rs`, `sleep.rs`,
//! `report.rs`; `pool_resource.rs` is the RMM-style resource over a device.

mod builder;
mod pool_resource;
mod report;
mod sleep;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mem_budget::GlobalBudgetHandle;
use mem_pools::{ManagedMemoryHandle, MemoryDeviceProperties, SleepContents, SleepReport};
use mem_relocate::{RelocationReason, RelocationSummary};
use mem_storage::{DeviceResource, MemInfo};

use crate::backend::Backend;
use crate::config::GpumemConfig;
use crate::error::{GpuMemError, Result};
use crate::relocation;
use crate::stats::device_stats::levels;
use crate::stats::{DeviceReport, MemoryStats};
use crate::stream::{PersistentWindow, Stream};

pub use crate::backend::{BudgetedResource, DeviceStorage, StreamMemory};
pub use crate::shared::Device;
pub use builder::DeviceBuilder;
pub use pool_resource::PoolResource;

/// The cudarc the CUDA backend is built on (to bring a context and streams).
pub use cudarc;

impl Device {
    /// Real host memory standing in for a device: the embedded default, and
    /// what every test runs on.
    pub fn host() -> DeviceBuilder {
        DeviceBuilder::new(Backend::Host { capacity: None })
    }

    /// Host memory that refuses to hold more than `capacity` bytes at once,
    /// like a device of that size.
    pub fn host_with_capacity(capacity: u64) -> DeviceBuilder {
        DeviceBuilder::new(Backend::Host {
            capacity: Some(capacity),
        })
    }

    /// A simulated device of `capacity` bytes: addresses and accounting, no
    /// memory, so workloads larger than this machine can be planned.
    pub fn simulated(capacity: u64) -> DeviceBuilder {
        DeviceBuilder::new(Backend::Simulated { capacity })
    }

    /// CUDA device `ordinal`.
    ///
    /// # Errors
    /// [`GpuMemError::CudaUnavailable`] when the CUDA driver cannot be loaded
    /// (checked before anything touches it) or the device cannot be opened.
    pub fn cuda(ordinal: usize) -> Result<DeviceBuilder> {
        Backend::cuda(ordinal).map(DeviceBuilder::new)
    }

    /// A device on a runtime's own CUDA context (bring your own CUDA):
    /// gpumem allocates in it, beside the runtime's kernels and modules.
    /// Give the runtime's streams with [`DeviceBuilder::cuda_streams`].
    ///
    /// # Errors
    /// [`GpuMemError::CudaUnavailable`] when the context's memory cannot be
    /// read.
    pub fn cuda_from_context(ctx: Arc<cudarc::driver::CudaContext>) -> Result<DeviceBuilder> {
        Backend::cuda_context(ctx).map(DeviceBuilder::new)
    }

    /// `"<backend>:<ordinal>"`, e.g. `"host:0"`.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The configuration the device was built with (after `GPUMEM_CONF`).
    pub fn config(&self) -> &GpumemConfig {
        &self.shared.config
    }

    /// The page limits and alignment every stream's pools use.
    pub fn properties(&self) -> &MemoryDeviceProperties {
        &self.shared.properties
    }

    /// Number of streams.
    pub fn stream_count(&self) -> usize {
        self.shared.streams.len()
    }

    /// Stream `index`.
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
    pub fn default_stream(&self) -> Stream {
        Stream::new(self.shared.clone(), 0)
    }

    /// Every stream, in index order.
    pub fn streams(&self) -> Vec<Stream> {
        (0..self.shared.streams.len())
            .map(|i| Stream::new(self.shared.clone(), i))
            .collect()
    }

    /// The stream that reserved `handle`.
    pub fn stream_of(&self, handle: &ManagedMemoryHandle) -> Result<Stream> {
        Ok(Stream::new(self.shared.clone(), self.shared.owner(handle)?))
    }

    /// The device budget's ledger: limit, charged bytes, peak, reservations.
    pub fn budget(&self) -> GlobalBudgetHandle {
        self.shared.resource.handle()
    }

    /// Free and total bytes of the device itself (below the budget).
    pub fn mem_info(&self) -> Result<MemInfo> {
        Ok(self.shared.resource.upstream().mem_info()?)
    }

    /// Device-wide statistics (see [`MemoryStats`]), current: every handle
    /// dropped before the call, on any thread, is counted freed.
    pub fn stats(&self) -> MemoryStats {
        self.drain();
        let mut stats = self.shared.device_stats();
        stats.num_alloc_retries = self.shared.retries.load(Ordering::Relaxed);
        stats.num_ooms = self.shared.ooms.load(Ordering::Relaxed);
        stats
    }

    /// Lower every peak of the device, of each stream and of the budget's
    /// ledger to its current level (`reset_peak_memory_stats`).
    pub fn reset_peak_stats(&self) {
        for stream in &self.shared.streams {
            let mut st = stream.lock();
            st.reset_peaks();
            stream.levels.reset_high();
        }
        let current = levels(&self.shared.device_stats());
        self.shared.peaks.reset(&current);
        self.shared.budget_reset_peak();
    }

    /// Wait for every stream's work and mark all of it complete.
    pub fn synchronize(&self) -> Result<()> {
        for stream in self.streams() {
            stream.synchronize()?;
        }
        Ok(())
    }

    /// Persistent mode on every stream until the guard drops (see
    /// [`Stream::persistent`]).
    pub fn persistent(&self) -> PersistentWindow {
        let streams = (0..self.shared.streams.len()).collect();
        PersistentWindow::open(self.shared.clone(), streams)
    }

    /// Process the handles dropped on any thread since each stream's last
    /// call, so [`Device::stats`] and [`Device::memory_report`] are current.
    pub fn drain(&self) {
        for index in 0..self.shared.streams.len() {
            self.shared.drain_stream(index);
        }
    }

    /// Move what every stream holds on outdated pages onto current pages,
    /// with the room `reason` allows.
    ///
    /// # Errors
    /// [`GpuMemError::Recording`] while any stream records a graph (nothing
    /// moves); a copy error (see [`mem_relocate::RelocationError`] for what
    /// leaked).
    pub fn relocate(&self, reason: RelocationReason) -> Result<RelocationSummary> {
        relocation::relocate_device(&self.shared, reason)
    }

    /// Give back everything the streams hold and nothing needs: outdated
    /// pages' live data moves into room already held, sparse current pages
    /// are compacted, then every empty page goes back. Reserved bytes never
    /// grow.
    pub fn reclaim(&self) -> Result<RelocationSummary> {
        relocation::reclaim_device(&self.shared)
    }

    /// Everything about the device's memory, as a value (`Display` prints
    /// it); current as [`Device::stats`] is.
    pub fn memory_report(&self) -> DeviceReport {
        self.drain();
        report::memory_report(&self.shared, || self.stats())
    }

    /// Release the physical memory of every stream's arenas, keeping every
    /// address (handles, raw pointers and captured graphs stay valid);
    /// [`SleepContents::Preserve`] copies live allocations' bytes to host
    /// memory first. Paged pools keep their pages.
    ///
    /// # Errors
    /// [`GpuMemError::Recording`] while a stream records a graph (nothing
    /// released); a storage refusal partway (the device counts as asleep and
    /// [`Device::wake`] maps back what was released);
    /// [`mem_pools::IoError::Asleep`] when already asleep.
    pub fn sleep(&self, contents: SleepContents) -> Result<SleepReport> {
        sleep::sleep(&self.shared, contents)
    }

    /// Map fresh memory at every address live allocations had at
    /// [`Device::sleep`] and copy back what it preserved; returns the bytes
    /// mapped (0 when not asleep).
    ///
    /// # Errors
    /// A storage refusal: what was mapped stays mapped, the device stays
    /// asleep, and calling `wake` again maps the rest.
    pub fn wake(&self) -> Result<u64> {
        sleep::wake(&self.shared)
    }

    /// Whether any stream's arenas are asleep.
    pub fn is_asleep(&self) -> bool {
        sleep::is_asleep(&self.shared)
    }
}
