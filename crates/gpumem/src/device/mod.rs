//! [`Device`]'s whole public API, in this one file, each method with a
//! runnable example: its streams, configuration, synchronize and
//! persistent windows first, then where a device starts (a
//! [`DeviceBuilder`] per backend: [`Device::host`], [`Device::simulated`],
//! [`Device::cuda`]), looking in ([`Device::budget`], [`Device::stats`],
//! [`Device::memory_report`]) and what moves or releases memory across the
//! streams ([`Device::relocate`], [`Device::reclaim`], [`Device::sleep`]).
//!
//! A device is a backend, a budget, and one pool engine per stream. Built
//! with [`DeviceBuilder`] (its API in `builder.rs`): pick the backend, set
//! what differs from the defaults, and [`DeviceBuilder::build`]. What the
//! streams share, and the one door to a stream's engine, is the crate's
//! `shared/device_shared.rs`; the machinery of the longer methods is
//! private, beside this file: `sleep.rs`, `report.rs`;
//! [`PoolResource`] (`pool_resource.rs`) is the RMM-style resource over a
//! device. The file is over 300 lines only in rustdoc, which
//! `cargo xtask layout` does not count (the examples belong with the API).

mod assemble;
mod builder;
mod peers;
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
use crate::relocation;
use crate::shared::DeviceShared;
use crate::stats::device_stats::levels;
use crate::stats::{DeviceReport, MemoryStats};

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
    /// assert!(device.stats().allocated_bytes.current >= MIB);
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
    /// assert_eq!(device.stats().allocated_bytes.current, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn drain(&self) {
        for index in 0..self.shared.streams.len() {
            self.shared.drain_stream(index);
        }
    }
}

// Where a device starts: a builder per backend.
impl Device {
    pub(crate) fn new(shared: Arc<DeviceShared>) -> Self {
        Self { shared }
    }

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
    /// match Device::cuda(0) {
    ///     Ok(builder) => assert!(builder.ignore_env().build()?.name().starts_with("cuda")),
    ///     Err(e) => assert!(matches!(e, GpuMemError::CudaUnavailable { ordinal: 0, .. })),
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
    ///     let device = Device::cuda_from_context(ctx)?.ignore_env().build()?;
    ///     assert!(device.name().starts_with("cuda"));
    /// }
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn cuda_from_context(ctx: Arc<cudarc::driver::CudaContext>) -> Result<DeviceBuilder> {
        Backend::cuda_context(ctx).map(DeviceBuilder::new)
    }
}

// Looking in: the budget, the driver's free and total bytes, statistics, the report.
impl Device {
    /// The device budget's ledger: limit, charged bytes, peak, reservations.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let device = Device::host().budget(Budget::Bytes(64 * MIB)).ignore_env().build()?;
    /// assert_eq!(device.budget().limit(), 64 * MIB);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn budget(&self) -> GlobalBudgetHandle {
        self.shared.resource.handle()
    }

    /// Free and total bytes of the device itself (below the budget).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert!(device.mem_info()?.total > 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn mem_info(&self) -> Result<MemInfo> {
        Ok(self.shared.resource.upstream().mem_info()?)
    }

    /// Device-wide statistics (see [`MemoryStats`]), current: every handle
    /// dropped before the call, on any thread, is counted freed.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let _buffer = stream.reserve(4096)?;
    /// assert!(device.stats().allocated_bytes.current >= 4096);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn stats(&self) -> MemoryStats {
        self.drain();
        let mut stats = self.shared.device_stats();
        stats.num_alloc_retries = self.shared.retries.load(Ordering::Relaxed);
        stats.num_ooms = self.shared.ooms.load(Ordering::Relaxed);
        stats.driver = self.shared.driver.snapshot();
        stats.waits = self.shared.waits.read(&stats.driver);
        stats.sharing = self.shared.sharing.read();
        stats
    }

    /// Lower every peak of the device, of each stream and of the budget's
    /// ledger to its current level (PyTorch's `reset_peak_memory_stats`),
    /// current as [`Device::stats`] is: handles dropped before the call are
    /// freed.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// drop(stream.reserve(MIB)?);
    /// device.reset_peak_stats();
    /// assert_eq!(device.stats().allocated_bytes.peak, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn reset_peak_stats(&self) {
        self.drain();
        for stream in &self.shared.streams {
            let mut st = stream.lock();
            st.reset_peaks();
            stream.levels.reset_high();
        }
        let current = levels(&self.shared.device_stats());
        self.shared.peaks.reset(&current);
        self.shared.budget_reset_peak();
    }

    /// Everything about the device's memory, as a value ([`Display`](std::fmt::Display) prints
    /// it); current as [`Device::stats`] is.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let _buffer = stream.reserve(4096)?;
    /// let report = device.memory_report();
    /// assert_eq!(report.device, "host:0");
    /// assert!(report.stats.allocated_bytes.current >= 4096);
    /// println!("{report}");
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn memory_report(&self) -> DeviceReport {
        self.drain();
        report::memory_report(&self.shared, || self.stats())
    }
}

// What moves or releases memory across the streams: relocation, reclaim, sleep/wake.
impl Device {
    /// Move what every stream holds on outdated pages onto current pages,
    /// with the room `reason` allows.
    ///
    /// # Errors
    /// [`crate::GpuMemError::Recording`] while any stream records a graph (nothing
    /// moves); a copy error (see [`mem_relocate::RelocationError`] for what
    /// leaked).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let summary = device.relocate(RelocationReason::Explicit)?;
    /// assert_eq!(summary.moved_slices, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn relocate(&self, reason: RelocationReason) -> Result<RelocationSummary> {
        relocation::relocate_device(&self.shared, reason)
    }

    /// Give back everything the streams hold and nothing needs: outdated
    /// pages' live data moves into room already held, sparse current pages
    /// are compacted, then every empty page goes back. Reserved bytes never
    /// grow.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// drop(stream.reserve(MIB)?);
    /// device.reclaim()?;
    /// assert_eq!(device.stats().reserved_bytes.current, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn reclaim(&self) -> Result<RelocationSummary> {
        relocation::reclaim_device(&self.shared)
    }

    /// Map a buffer another process exported ([`crate::Stream::export`])
    /// into this one: its chunks imported and mapped end to end in a range
    /// of their own. Not charged to this device's budget; dropping the
    /// result releases this process's side only.
    ///
    /// # Errors
    /// [`crate::GpuMemError::BadSharedBuffer`] when the descriptor's chunks
    /// do not lie end to end over its length or come from another kind of
    /// device; [`crate::GpuMemError::Storage`] with
    /// [`mem_storage::StorageError::BadShareHandle`] for a descriptor that is
    /// not an exported chunk of its size;
    /// [`crate::GpuMemError::SharingUnavailable`] on a device without
    /// virtual memory. Nothing stays mapped on error.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let mut config = GpumemConfig::default();
    /// config.share = Some(gpumem::storage::ShareHandles::POSIX_FD);
    /// let exporter = Device::host().config(config).ignore_env().build()?;
    /// let stream = exporter.default_stream();
    /// let buffer = stream.reserve_shareable(MIB)?;
    /// buffer.write(0, b"kv")?;
    /// // Another process would receive this with gpumem::sharing::receive_shared.
    /// let shared = stream.export(&buffer)?;
    /// let importer = Device::host().ignore_env().build()?;
    /// let view = importer.import(shared)?;
    /// let mut out = [0; 2];
    /// view.read(0, &mut out)?;
    /// assert_eq!(&out, b"kv");
    /// # Ok::<(), GpuMemError>(())
    /// ```
    #[cfg(unix)]
    pub fn import(
        &self,
        shared: crate::sharing::SharedBuffer,
    ) -> Result<crate::sharing::ImportedBuffer> {
        crate::sharing::import(&self.shared, shared)
    }

    /// Release the physical memory of every stream's arenas, keeping every
    /// address (handles, raw pointers and captured graphs stay valid);
    /// [`SleepContents::Preserve`] copies live allocations' bytes to host
    /// memory first. Paged pools keep their pages.
    ///
    /// # Errors
    /// [`crate::GpuMemError::Recording`] while a stream records a graph (nothing
    /// released); a storage refusal partway (the device counts as asleep and
    /// [`Device::wake`] maps back what was released);
    /// [`mem_pools::IoError::Asleep`] when already asleep.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(MIB)?;
    /// stream.write(&buffer, &[7])?;
    /// device.sleep(SleepContents::Preserve)?;
    /// device.wake()?;
    /// let mut byte = [0];
    /// stream.read(&buffer, &mut byte)?;
    /// assert_eq!(byte, [7]);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn sleep(&self, contents: SleepContents) -> Result<SleepReport> {
        sleep::sleep(&self.shared, contents)
    }

    /// Map fresh memory at every address live allocations had at
    /// [`Device::sleep`] and copy back what it preserved; returns the bytes
    /// mapped (0 when not asleep).
    ///
    /// # Errors
    /// A storage refusal: what was mapped stays mapped, the device stays
    /// asleep, and calling [`Device::wake`] again maps the rest.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// device.sleep(SleepContents::Discard)?;
    /// assert!(device.wake().is_ok());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn wake(&self) -> Result<u64> {
        sleep::wake(&self.shared)
    }

    /// Whether any stream's arenas are asleep.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert!(!device.is_asleep());
    /// device.sleep(SleepContents::Discard)?;
    /// assert!(device.is_asleep());
    /// device.wake()?;
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn is_asleep(&self) -> bool {
        sleep::is_asleep(&self.shared)
    }
}

// Other devices reaching this one's memory.
impl Device {
    /// Let `peer` read and write this device's memory: every arena chunk
    /// mapped now, and every chunk mapped later, is opened to `peer`'s
    /// device (one `cuMemSetAccess` descriptor more per map), and so are
    /// its pages, now and later (`cuCtxEnablePeerAccess`, or
    /// `cuMemPoolSetAccess` for stream-ordered memory). A runtime, NCCL or
    /// a kernel on `peer` may then use this device's buffers directly.
    /// Granting twice changes nothing.
    ///
    /// # Errors
    /// [`crate::GpuMemError::Peer`] when either device is not CUDA, both
    /// are the same device, or the driver has no peer link between them;
    /// nothing changes. A storage error when the driver refuses part-way
    /// (the access already set is taken back).
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let a = Device::host().ignore_env().build()?;
    /// let b = Device::host().ignore_env().build()?;
    /// assert!(matches!(a.grant_access(&b), Err(GpuMemError::Peer { .. }))); // CUDA only
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn grant_access(&self, peer: &Device) -> Result<()> {
        peers::set(&self.shared, &peer.shared, true)
    }

    /// Take `peer`'s access away from every chunk and page; memory mapped
    /// or allocated later is not opened to it. The caller makes sure no
    /// work of `peer` still uses this device's memory (as before a free):
    /// the driver faults such work. Revoking a peer without access changes
    /// nothing. Pages are opened card-wide: while another `Device` of the
    /// same CUDA ordinal grants `peer` too, they stay open until it revokes
    /// (or is dropped); a dropped device gives its grants back.
    ///
    /// # Errors
    /// As [`Device::grant_access`].
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let a = Device::host().ignore_env().build()?;
    /// let b = Device::host().ignore_env().build()?;
    /// assert!(a.revoke_access(&b).is_err()); // CUDA only
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn revoke_access(&self, peer: &Device) -> Result<()> {
        peers::set(&self.shared, &peer.shared, false)
    }

    /// The names of the devices granted access, in grant order.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().ignore_env().build()?;
    /// assert!(device.peers().is_empty());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn peers(&self) -> Vec<String> {
        peers::names(&self.shared)
    }
}
