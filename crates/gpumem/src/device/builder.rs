//! `DeviceBuilder`: choose a backend and what differs from the defaults.
//!
//! The build applies `GPUMEM_CONF` (unless [`DeviceBuilder::ignore_env`]),
//! checks every value, resolves the budget against the device, and only
//! then creates anything: the budget adaptor over the backend, one storage
//! and pool engine per stream over it, and the relocation copy queue. A bad
//! value is an error before any memory is touched.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use mem_pools::{
    CopyQueue, MemoryConfiguration, MemoryDeviceProperties, MemoryManagementOptions,
    MemoryPoolOptions, PoolType, ServerLogger,
};
use mem_relocate::{CudaCopyQueue, ModeledCopyQueue};
use mem_storage::{
    DeviceResource, DriverCostResource, DriverCosts, DriverMeter, ResourceStorage, VirtualMemory,
};

use crate::backend::{Backend, DeviceStorage, StreamMemory, budgeted};
use crate::config::layout::format_layout;
use crate::config::{Budget, GpumemConfig, PoolLayout};
use crate::error::{GpuMemError, Result};
use crate::shared::moving::MovingLock;
use crate::shared::{CopyQueueSlot, Device, DeviceShared, StreamShared};
use crate::stats::device_stats::DevicePeaks;

/// Chooses a backend and what differs from the defaults, then builds a [`Device`].
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until build()"]
pub struct DeviceBuilder {
    backend: Backend,
    config: GpumemConfig,
    use_env: bool,
}

impl DeviceBuilder {
    pub(crate) fn new(backend: Backend) -> Self {
        Self {
            backend,
            config: GpumemConfig::default(),
            use_env: true,
        }
    }

    /// Serve the runtime's own CUDA streams, in order: stream `i` of the
    /// device is `streams[i]` (so `streams.len()` streams at least; more
    /// are created). Ignored off CUDA. Every stream must belong to the
    /// device's context, else `build` fails.
    pub fn cuda_streams(mut self, streams: Vec<Arc<cudarc::driver::CudaStream>>) -> Self {
        if let Backend::Cuda { streams: mine, .. } = &mut self.backend {
            self.config.streams = self.config.streams.max(streams.len());
            *mine = streams;
        }
        self
    }

    /// Replace the whole configuration.
    pub fn config(mut self, config: GpumemConfig) -> Self {
        self.config = config;
        self
    }

    /// The device budget, charged for every page any stream holds.
    pub fn budget(mut self, budget: Budget) -> Self {
        self.config.budget = budget;
        self
    }

    /// The layout of every stream's pools.
    pub fn pools(mut self, layout: PoolLayout) -> Self {
        self.config.pools = layout;
        self
    }

    /// The largest page the pools allocate at once.
    pub fn max_page_size(mut self, bytes: u64) -> Self {
        self.config.max_page_size = Some(bytes);
        self
    }

    /// How many streams the device has (each with its own pools).
    pub fn streams(mut self, count: usize) -> Self {
        self.config.streams = count;
        self
    }

    /// Map pages on first touch (dry runs cost no memory).
    pub fn lazy_pages(mut self, lazy: bool) -> Self {
        self.config.lazy_pages = lazy;
        self
    }

    /// Relocate outdated pages before a reservation whenever the trigger asks.
    pub fn auto_relocate(mut self, auto: bool) -> Self {
        self.config.auto_relocate = auto;
        self
    }

    /// Debug: fill freed memory with `byte` before it can be reused.
    pub fn poison(mut self, byte: Option<u8>) -> Self {
        self.config.poison = byte;
        self
    }

    /// Debug: every reservation is its own storage allocation, every free
    /// page goes back at once.
    pub fn bypass_caching(mut self, bypass: bool) -> Self {
        self.config.bypass_caching = bypass;
        self
    }

    /// Apply a `GPUMEM_CONF`-style string now (before the environment's).
    pub fn conf(mut self, text: &str) -> Result<Self> {
        self.config.apply_conf(text)?;
        Ok(self)
    }

    /// Do not read `GPUMEM_CONF` at build (tests, embedded use).
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
    pub fn build(self) -> Result<Device> {
        let config = if self.use_env {
            self.config.with_env()?
        } else {
            self.config
        };
        config.validate()?;
        let opened = self.backend.open();
        // Every driver call under the budget is charged its modeled cost:
        // pages here, chunks below. On CUDA the real time is in the wall
        // clock, so the meter only counts.
        let costs = match self.backend {
            Backend::Cuda { .. } => DriverCosts::ZERO,
            _ => config.driver_costs,
        };
        let driver = Arc::new(DriverMeter::new(costs));
        let charged: Arc<dyn DeviceResource> = Arc::new(
            DriverCostResource::new(opened.resource.clone(), driver.clone())
                .with_page_calls(self.backend.page_calls()),
        );
        let resource = budgeted(&self.backend, charged, config.budget)?;
        let capacity = resource.mem_info()?.total;
        let properties = MemoryDeviceProperties {
            max_page_size: config.resolved_max_page(capacity),
            alignment: resource.alignment(),
        };
        // Virtual memory for arena pools: its chunks draw on the device's
        // physical memory beside the pages, and are charged to the same
        // budget.
        let wants_arenas = config.pools.uses_arenas(true) && !config.bypass_caching;
        let vm = match wants_arenas {
            true => Some(self.backend.virtual_memory(&opened)),
            false => None,
        };
        // `pools: auto` keeps paged pools where arenas cannot pay off: a
        // device (or budget) of fewer than 16 chunks.
        let vm = match vm {
            Some(Ok(vm)) if config.pools == PoolLayout::Auto => {
                let chunks = capacity / vm.granularity().max(1);
                if chunks < 16 {
                    Some(Err(format!(
                        "the device or budget holds {chunks} chunks of {} B, fewer than 16",
                        vm.granularity()
                    )))
                } else {
                    Some(Ok(vm))
                }
            }
            other => other,
        };
        let (vm, fallback) = match vm {
            Some(Ok(vm)) => {
                let vm: Arc<dyn VirtualMemory> =
                    Arc::new(DriverCostResource::new(vm, driver.clone()));
                (
                    Some(Arc::new(resource.charge_virtual_memory(vm)) as Arc<dyn VirtualMemory>),
                    None,
                )
            }
            Some(Err(reason)) if config.pools.requires_virtual_memory() => {
                tracing::warn!(%reason, "pools:arenas asked for, but no virtual memory");
                return Err(GpuMemError::InvalidConfig {
                    parameter: "pools",
                    value: format_layout(&config.pools),
                    expected: "a backend with virtual memory (use pools:auto or pools:sub_slices)",
                });
            }
            Some(Err(reason)) => (None, Some(reason)),
            None => (None, None),
        };
        let layout = if config.bypass_caching {
            MemoryConfiguration::Custom {
                pool_options: vec![MemoryPoolOptions {
                    pool_type: PoolType::ExclusivePages {
                        max_alloc_size: properties.effective_max_page(),
                    },
                    dealloc_period: Some(0),
                }],
            }
        } else {
            config
                .pools
                .to_configuration(properties.effective_max_page(), capacity, vm.is_some())
        };
        let name = self.backend.name();
        let mut streams = Vec::with_capacity(config.streams);
        for index in 0..config.streams {
            let id = self.backend.stream_id(index)?;
            let label = format!("{name}/stream{index}");
            let storage = ResourceStorage::on_stream(resource.clone(), id);
            let storage = match &vm {
                Some(vm) => storage.with_virtual_memory(vm.clone()),
                None => storage,
            };
            let engine = StreamMemory::from_configuration(
                storage,
                &properties,
                layout.clone(),
                Arc::new(ServerLogger::named(label.clone())),
                MemoryManagementOptions {
                    name: label,
                    lazy_pages: config.lazy_pages,
                    arena_max_chunk: config.arena_max_chunk,
                    arena_idle_share: config.arena_idle_share,
                },
            );
            streams.push(StreamShared::new(id, engine, capacity));
        }
        let queue: Box<dyn CopyQueue<DeviceStorage> + Send> = match &self.backend {
            Backend::Cuda { resource, .. } => {
                Box::new(CudaCopyQueue::new(resource.clone())?.with_meter(driver.clone()))
            }
            // Charged as CUDA's copy stream and events are (parity).
            _ => Box::new(ModeledCopyQueue::new(streams.len(), driver.clone())),
        };
        Ok(Device {
            shared: Arc::new(DeviceShared {
                name,
                resource,
                peaks: DevicePeaks::default(),
                config,
                properties,
                streams,
                moving: MovingLock::default(),
                capture_gate: Mutex::new(()),
                retries: AtomicU64::new(0),
                ooms: AtomicU64::new(0),
                copy_queue: CopyQueueSlot(Mutex::new(queue)),
                virtual_memory: vm,
                cuda: self.backend.cuda_resource(),
                arena_fallback: fallback,
                driver,
                waits: Default::default(),
            }),
        })
    }
}
