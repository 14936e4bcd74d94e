//! The machinery of [`DeviceBuilder::build`](super::DeviceBuilder::build):
//! applies `GPUMEM_CONF` (unless the builder ignores it), checks every
//! value, resolves the budget against the device, and only then creates
//! anything: the budget adaptor over the backend, one storage and pool
//! engine per stream over it, and the relocation copy queue. A bad value is
//! an error before any memory is touched.

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
use crate::config::{GpumemConfig, PoolLayout};
use crate::error::{GpuMemError, Result};
use crate::shared::moving::MovingLock;
use crate::shared::{CopyQueueSlot, Device, DeviceShared, StreamShared};
use crate::stats::device_stats::DevicePeaks;

/// A device's chunk hooks (a builder is `Debug`; a hook need not be).
#[derive(Clone)]
pub(crate) struct Hooks(pub(crate) Arc<dyn mem_storage::ChunkHooks>);

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChunkHooks")
    }
}

/// Builds the device `backend` serves with `config` (then `GPUMEM_CONF`
/// when `use_env`), its chunk mappings announced to `hooks`.
pub(crate) fn build(
    backend: Backend,
    config: GpumemConfig,
    use_env: bool,
    hooks: Option<Hooks>,
) -> Result<Device> {
    let config = if use_env { config.with_env()? } else { config };
    config.validate()?;
    let opened = backend.open();
    // Every driver call under the budget is charged its modeled cost:
    // pages here, chunks below. On CUDA the real time is in the wall
    // clock, so the meter only counts.
    let costs = match backend {
        Backend::Cuda { .. } => DriverCosts::ZERO,
        _ => config.driver_costs,
    };
    let driver = Arc::new(DriverMeter::new(costs));
    let mut charged: Arc<dyn DeviceResource> = Arc::new(
        DriverCostResource::new(opened.resource.clone(), driver.clone())
            .with_page_calls(backend.page_calls()),
    );
    // Below the budget, whose ledger holds no lock across the call: a
    // hook runs outside it, and a refused page is never charged.
    if let Some(Hooks(hooks)) = &hooks {
        charged = Arc::new(mem_storage::HookedResource::new(charged, hooks.clone()));
    }
    let resource = budgeted(&backend, charged, config.budget)?;
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
        true => Some(backend.virtual_memory(&opened)),
        false => None,
    };
    // `pools: auto` keeps paged pools where arenas cannot pay off: a
    // device (or budget) of fewer than 16 chunks.
    let vm = match vm {
        Some(Ok(vm)) if config.pools == PoolLayout::Auto => {
            let chunks = capacity / vm.0.granularity().max(1);
            if chunks < 16 {
                Some(Err(format!(
                    "the device or budget holds {chunks} chunks of {} B, fewer than 16",
                    vm.0.granularity()
                )))
            } else {
                Some(Ok(vm))
            }
        }
        other => other,
    };
    let mut cuda_vm = None;
    let peer_count = Arc::new(AtomicU64::new(0));
    let (vm, fallback) = match vm {
        Some(Ok((vm, cuda))) => {
            cuda_vm = cuda;
            let vm: Arc<dyn VirtualMemory> = Arc::new(
                DriverCostResource::new(vm, driver.clone()).with_peer_count(peer_count.clone()),
            );
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
    // Outermost, so that a hook runs outside every lower layer's lock
    // (the table, the budget's ledger) and sees the chunk mapped.
    let vm = match (vm, hooks) {
        (Some(vm), Some(Hooks(hooks))) => {
            Some(Arc::new(mem_storage::HookedVirtualMemory::new(vm, hooks))
                as Arc<dyn VirtualMemory>)
        }
        (vm, _) => vm,
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
    let name = backend.name();
    let mut streams = Vec::with_capacity(config.streams);
    for index in 0..config.streams {
        let id = backend.stream_id(index)?;
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
    let queue: Box<dyn CopyQueue<DeviceStorage> + Send> = match &backend {
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
            cuda_vm,
            peers: Mutex::new(Vec::new()),
            peer_count,
            cuda: backend.cuda_resource(),
            arena_fallback: fallback,
            driver,
            waits: Default::default(),
            sharing: Default::default(),
        }),
    })
}
