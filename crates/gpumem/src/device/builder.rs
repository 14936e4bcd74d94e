//! [`DeviceBuilder`]'s whole public API, each method with a runnable
//! example: choose a backend (from [`Device::host`], [`Device::simulated`],
//! [`Device::cuda`], ...) and what differs from the defaults, then
//! [`DeviceBuilder::build`]. The build's machinery is private, beside this
//! file (`assemble.rs`).

use std::sync::Arc;

use super::assemble;
use crate::backend::Backend;
use crate::config::{Budget, GpumemConfig, PoolLayout};
use crate::error::Result;
use crate::shared::Device;

/// Chooses a backend and what differs from the defaults, then builds a [`Device`].
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until build()"]
pub struct DeviceBuilder {
    backend: Backend,
    config: GpumemConfig,
    use_env: bool,
    hooks: Option<assemble::Hooks>,
}

impl DeviceBuilder {
    pub(crate) fn new(backend: Backend) -> Self {
        Self {
            backend,
            config: GpumemConfig::default(),
            use_env: true,
            hooks: None,
        }
    }

    /// Serve the runtime's own CUDA streams, in order: stream `i` of the
    /// device is `streams[i]` (so `streams.len()` streams at least; more
    /// are created). Ignored off CUDA. Every stream must belong to the
    /// device's context, else [`DeviceBuilder::build`] fails.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().cuda_streams(Vec::new()).streams(2).ignore_env().build()?;
    /// assert_eq!(device.stream_count(), 2); // off CUDA the list is ignored
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn cuda_streams(mut self, streams: Vec<Arc<cudarc::driver::CudaStream>>) -> Self {
        if let Backend::Cuda { streams: mine, .. } = &mut self.backend {
            self.config.streams = self.config.streams.max(streams.len());
            *mine = streams;
        }
        self
    }

    /// Replace the whole configuration.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let mut config = GpumemConfig::default();
    /// config.streams = 3;
    /// let device = Device::host().config(config).ignore_env().build()?;
    /// assert_eq!(device.stream_count(), 3);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn config(mut self, config: GpumemConfig) -> Self {
        self.config = config;
        self
    }

    /// The device budget, charged for every page any stream holds.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().budget(Budget::Bytes(64 * MIB)).ignore_env().build()?;
    /// let stream = device.default_stream();
    /// assert!(stream.reserve(MIB).is_ok());
    /// assert!(stream.reserve(128 * MIB).is_err()); // over the budget
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn budget(mut self, budget: Budget) -> Self {
        self.config.budget = budget;
        self
    }

    /// The layout of every stream's pools.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().pools(PoolLayout::SubSlices).ignore_env().build()?;
    /// assert_eq!(device.config().pools, PoolLayout::SubSlices);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn pools(mut self, layout: PoolLayout) -> Self {
        self.config.pools = layout;
        self
    }

    /// The largest page the pools allocate at once.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().max_page_size(4 * MIB).ignore_env().build()?;
    /// assert_eq!(device.properties().max_page_size, 4 * MIB);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn max_page_size(mut self, bytes: u64) -> Self {
        self.config.max_page_size = Some(bytes);
        self
    }

    /// How many streams the device has (each with its own pools).
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().streams(4).ignore_env().build()?;
    /// assert_eq!(device.streams().len(), 4);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn streams(mut self, count: usize) -> Self {
        self.config.streams = count;
        self
    }

    /// Map pages on first touch (dry runs cost no memory).
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().lazy_pages(true).ignore_env().build()?;
    /// assert!(device.config().lazy_pages);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn lazy_pages(mut self, lazy: bool) -> Self {
        self.config.lazy_pages = lazy;
        self
    }

    /// Relocate outdated pages before a reservation whenever the trigger asks.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().auto_relocate(false).ignore_env().build()?;
    /// assert!(!device.config().auto_relocate);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn auto_relocate(mut self, auto: bool) -> Self {
        self.config.auto_relocate = auto;
        self
    }

    /// Debug: fill freed memory with `byte` before it can be reused.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().poison(Some(0xAB)).ignore_env().build()?;
    /// assert_eq!(device.config().poison, Some(0xAB));
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn poison(mut self, byte: Option<u8>) -> Self {
        self.config.poison = byte;
        self
    }

    /// Debug: every reservation is its own storage allocation, every free
    /// page goes back at once.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().bypass_caching(true).ignore_env().build()?;
    /// let stream = device.default_stream();
    /// drop(stream.reserve(MIB)?);
    /// assert_eq!(stream.stats().reserved_bytes.current, 0); // nothing cached
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn bypass_caching(mut self, bypass: bool) -> Self {
        self.config.bypass_caching = bypass;
        self
    }

    /// Apply a `GPUMEM_CONF`-style string now (before the environment's).
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().conf("streams:3")?.ignore_env().build()?;
    /// assert_eq!(device.stream_count(), 3);
    /// assert!(Device::host().conf("no_such_key:1").is_err());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn conf(mut self, text: &str) -> Result<Self> {
        self.config.apply_conf(text)?;
        Ok(self)
    }

    /// Do not read `GPUMEM_CONF` at build (tests, embedded use).
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().ignore_env().build()?;
    /// assert_eq!(device.config(), &GpumemConfig::default());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn ignore_env(mut self) -> Self {
        self.use_env = false;
        self
    }

    /// Build the device: apply `GPUMEM_CONF`, check every value, resolve the
    /// budget, and create each stream's pools over the budgeted storage.
    ///
    /// # Errors
    /// Configuration errors (listing what is valid), a budget fraction the
    /// device cannot resolve, or a stream the backend cannot create.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().ignore_env().build()?;
    /// assert_eq!(device.name(), "host:0");
    /// assert!(Device::host().streams(0).ignore_env().build().is_err());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn build(self) -> Result<Device> {
        assemble::build(self.backend, self.config, self.use_env, self.hooks)
    }

    /// Tell `hooks` of every arena chunk the device maps, after it is
    /// mapped and given access and before any buffer in it is handed out,
    /// and again before it is unmapped; and likewise of every page (a
    /// whole allocation of a paged or the persistent pool) after it is
    /// allocated and before it is freed. What a library that registers
    /// memory (NCCL's `ncclCommRegister`, UCX, `ibv_reg_mr`) needs. Calls
    /// are per physical chunk or page; they run outside every lock shared
    /// between streams, so a slow registration delays only the reservation
    /// that needed the memory. A hook's error refuses that memory: the
    /// reservation fails with the hook's words
    /// (`StorageError::HookRefused`), with nothing left mapped or charged. The contract in
    /// full: mem-storage's [`mem_storage::ChunkHooks`].
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// use std::sync::{Arc, atomic::{AtomicU64, Ordering}};
    /// use gpumem::storage::{ChunkHooks, MappedChunk};
    ///
    /// #[derive(Default)]
    /// struct Registered(AtomicU64);
    /// impl ChunkHooks for Registered {
    ///     fn mapped(&self, c: MappedChunk) -> Result<(), String> {
    ///         self.0.fetch_add(c.bytes, Ordering::Relaxed); // ncclCommRegister(c.ptr, c.bytes)
    ///         Ok(())
    ///     }
    ///     fn unmapping(&self, c: MappedChunk) {
    ///         self.0.fetch_sub(c.bytes, Ordering::Relaxed); // ncclCommDeregister
    ///     }
    /// }
    ///
    /// let registered = Arc::new(Registered::default());
    /// let device = Device::host().chunk_hooks(registered.clone()).ignore_env().build()?;
    /// let buffer = device.default_stream().reserve(3 * MIB)?;
    /// assert!(registered.0.load(Ordering::Relaxed) >= 3 * MIB);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn chunk_hooks(mut self, hooks: Arc<dyn mem_storage::ChunkHooks>) -> Self {
        self.hooks = Some(assemble::Hooks(hooks));
        self
    }
}
