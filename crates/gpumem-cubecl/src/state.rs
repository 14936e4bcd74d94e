//! `MemoryManagement`'s fields, its construction, the sweep that gives
//! dropped allocations back to the engine, and its `Debug` / `Display`
//! forms (its public API is `management.rs`).

use std::fmt;
use std::sync::Arc as StdArc;
use std::sync::atomic::AtomicU64;

use cubecl_environment::sync::Arc;
use cubecl_ir::MemoryDeviceProperties;
use cubecl_server::config::{CubeClRuntimeConfig, RuntimeConfig, memory::PersistentMemory};
use cubecl_server::logging::ServerLogger;
use cubecl_server::memory_management::{ErrorGraph, MemoryAllocationMode, MemoryConfiguration};
use cubecl_server::storage::ComputeStorage;
use mem_pools::RelocationShape;

/// Entries [`MemoryManagement::sweep_some`] looks at on each reserve: two
/// per reserve keeps the clock hand ahead of the entries a steady
/// workload adds (one per reserve), so no free allocation waits long.
pub(crate) const SWEEP_PER_RESERVE: usize = 2;

use crate::entries::Entries;
use crate::options::MemoryManagementOptions;
use crate::storage::CubeStorage;
use crate::trace::Tracer;

/// CubeCL's `MemoryManagement<Storage>`, served by gpumem's engine over
/// CubeCL's own storage (see the crate docs).
pub struct MemoryManagement<Storage> {
    pub(crate) name: String,
    pub(crate) engine: mem_pools::MemoryManagement<CubeStorage<Storage>>,
    pub(crate) entries: Entries,
    /// The mode in force now.
    pub(crate) mode: MemoryAllocationMode,
    /// The mode no window overrides.
    pub(crate) base_mode: MemoryAllocationMode,
    /// Open allocation windows, innermost last.
    pub(crate) windows: Vec<MemoryAllocationMode>,
    pub(crate) config: PersistentMemory,
    /// Whether the engine has a persistent window open (its mode mirrors
    /// `mode`: `Dedicated` has no pool of its own in gpumem).
    pub(crate) engine_persistent: bool,
    /// The engine's dynamic pools (the persistent one is at this position).
    pub(crate) dynamic_pools: usize,
    /// Of those, the ones whose pages grow: CubeCL's `Adaptive` kind.
    pub(crate) growable: Vec<bool>,
    /// The device's stated capacity, for relocation's pressure test.
    pub(crate) capacity: Option<u64>,
    /// The pools' shape when the last relocation moved nothing.
    pub(crate) stalled: Option<RelocationShape>,
    pub(crate) allocated: StdArc<AtomicU64>,
    pub(crate) logger: Arc<ServerLogger>,
    /// The trace being recorded, if any (`crate::trace`).
    pub(crate) trace: Option<Tracer>,
}

impl<Storage: ComputeStorage> MemoryManagement<Storage> {
    pub(crate) fn build(
        storage: Storage,
        properties: &MemoryDeviceProperties,
        config: MemoryConfiguration,
        logger: Arc<ServerLogger>,
        options: MemoryManagementOptions,
    ) -> Self {
        let gpumem_config = layout(&config);
        let gpumem_properties = mem_pools::MemoryDeviceProperties {
            max_page_size: properties.max_page_size,
            alignment: properties.alignment,
        };
        let storage = CubeStorage::new(storage, properties.max_memory());
        let allocated = storage.allocated();
        let engine = mem_pools::MemoryManagement::from_configuration(
            storage,
            &gpumem_properties,
            gpumem_config,
            StdArc::new(mem_pools::ServerLogger::default()),
            mem_pools::MemoryManagementOptions::named(options.name.clone()),
        );
        let report = engine.memory_report();
        let dynamic_pools = report.pools.len().saturating_sub(1);
        let growable = report.pools[..dynamic_pools]
            .iter()
            .map(|pool| match pool.kind {
                mem_pools::PoolReportKind::Sliced {
                    page_size,
                    max_slice_size,
                    ..
                } => max_slice_size > page_size,
                _ => false,
            })
            .collect();
        let config = CubeClRuntimeConfig::get().memory.persistent_memory.clone();
        let base_mode = options.base_mode(&config);
        let trace = Tracer::new(&options.name, options.trace.as_deref());
        let mut memory = Self {
            name: options.name,
            engine,
            entries: Entries::default(),
            mode: base_mode,
            base_mode,
            windows: Vec::new(),
            config,
            engine_persistent: false,
            dynamic_pools,
            growable,
            capacity: properties.max_memory(),
            stalled: None,
            allocated,
            logger,
            trace,
        };
        memory.sync_engine_mode();
        memory
    }

    /// Give every allocation nothing holds any more back to the engine, and
    /// have the engine free them now.
    pub(crate) fn sweep(&mut self, failures: &mut ErrorGraph) -> usize {
        let released = self.entries.sweep(failures);
        if released > 0 {
            self.engine.drain_drops();
            self.trace_frees();
        }
        released
    }

    /// Write the frees the last sweep found to the trace.
    fn trace_frees(&mut self) {
        if let Some(trace) = &self.trace {
            for id in self.entries.freed.drain(..) {
                trace.free(id);
            }
        }
    }

    /// [`Self::sweep`] over [`SWEEP_PER_RESERVE`] entries only (a clock
    /// hand): the reserve path's O(1) share of the sweep.
    pub(crate) fn sweep_some(&mut self, failures: &mut ErrorGraph) {
        if self.entries.sweep_some(SWEEP_PER_RESERVE, failures) > 0 {
            self.engine.drain_drops();
            self.trace_frees();
        }
    }

    /// Open or close the engine's persistent window so its mode is `mode`.
    pub(crate) fn sync_engine_mode(&mut self) {
        let persistent = matches!(self.mode, MemoryAllocationMode::Persistent);
        if persistent != self.engine_persistent {
            self.engine.mode(if persistent {
                mem_pools::MemoryAllocationMode::Persistent
            } else {
                mem_pools::MemoryAllocationMode::Auto
            });
            self.engine_persistent = persistent;
            if let Some(trace) = &self.trace {
                trace.mode(persistent);
            }
        }
    }
}

/// gpumem's layout for CubeCL's: paged pools either way, since CubeCL's
/// storage cannot do virtual memory.
#[allow(unreachable_patterns)]
fn layout(config: &MemoryConfiguration) -> mem_pools::MemoryConfiguration {
    match config {
        MemoryConfiguration::ExclusivePages => mem_pools::MemoryConfiguration::ExclusivePages,
        _ => mem_pools::MemoryConfiguration::SubSlices,
    }
}

impl<Storage: ComputeStorage> fmt::Display for MemoryManagement<Storage> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\n# MemoryManagement (gpumem)\n\n")?;
        writeln!(f, " - name: {:?}", self.name)?;
        writeln!(f, " - allocations held: {}", self.entries.len())?;
        writeln!(f, "\n## Engine\n\n{}", self.engine.memory_report())?;
        write!(f, "\n## Summary\n\n{}", self.memory_report().usage())
    }
}

impl<Storage> fmt::Debug for MemoryManagement<Storage> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DynamicMemoryManagement {:?} (gpumem)",
            std::any::type_name::<Storage>()
        )
    }
}
