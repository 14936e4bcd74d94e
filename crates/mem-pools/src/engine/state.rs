//! `MemoryManagement`'s fields, its construction and its `Debug` form (its
//! public API is `management.rs`).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use mem_storage::ComputeStorage;

use crate::capture::record::CaptureRecord;
use crate::config::{
    MemoryAllocationMode, MemoryConfiguration, MemoryDeviceProperties, MemoryManagementOptions,
};
use crate::handles::cell_pool::CellPool;
use crate::handles::keys::{Dropped, next_manager_id};
use crate::logger::ServerLogger;
use crate::pools::core::Core;
use crate::pools::paged::pool::Pool;

/// Reserves and keeps track of pages in the storage, and slices upon them.
///
/// See the crate documentation for the contract; `docs/pools.md` explains
/// the engine (pools, handles, free path, complexity).
pub struct MemoryManagement<Storage> {
    pub(crate) storage: Storage,
    pub(crate) core: Core,
    pub(crate) id: u64,
    /// Handle cells (made, recycled) and the drop queue they come back on.
    pub(crate) cells: CellPool,
    /// The drain's batch buffer, kept between drains (see `drop_queue.rs`).
    pub(crate) drained: Vec<Dropped>,
    pub(crate) properties: MemoryDeviceProperties,
    pub(crate) config: MemoryConfiguration,
    pub(crate) options: MemoryManagementOptions,
    pub(crate) logger: Arc<ServerLogger>,
    /// Open Persistent windows.
    pub(crate) persistent_depth: u64,
    pub(crate) capture: Option<CaptureRecord>,
    /// Bumped by `install_pools` and every relocation commit.
    pub(crate) epoch: u64,
    /// `stats.storage_frees` at the last storage flush.
    pub(crate) flushed_frees: u64,
    /// The clock at which the next exclusive pool's aging check is due (the
    /// least `next_age_check` of the pools with a period; 0: look again,
    /// as after `install_pools`).
    pub(crate) age_due: u64,
    /// The stream's live submit counter, when the runtime shares it
    /// ([`MemoryManagement::set_submit_cursor`]).
    pub(crate) submit_cursor: Option<Arc<AtomicU64>>,
}

impl<S: ComputeStorage> MemoryManagement<S> {
    /// `from_configuration`'s body: the pools of `config` resolved against
    /// `properties`, the alignment the storage and the device agree on.
    pub(crate) fn build(
        storage: S,
        properties: &MemoryDeviceProperties,
        config: MemoryConfiguration,
        logger: Arc<ServerLogger>,
        options: MemoryManagementOptions,
    ) -> Self {
        let pools = config
            .resolve(properties)
            .iter()
            .map(Pool::from_spec)
            .collect();
        let alignment = properties.effective_alignment().max(
            storage
                .alignment()
                .max(1)
                .checked_next_power_of_two()
                .unwrap_or(1),
        );
        let id = next_manager_id();
        let mut core = Core::new(
            pools,
            alignment,
            properties.effective_max_page(),
            options.lazy_pages,
        );
        core.arenas.max_chunk_bytes = options
            .arena_max_chunk
            .unwrap_or(crate::pools::arena::state::DEFAULT_MAX_CHUNK);
        core.arenas.idle_share = options
            .arena_idle_share
            .unwrap_or(crate::pools::arena::state::IDLE_SHARE);
        Self {
            core,
            storage,
            id,
            cells: CellPool::new(id),
            drained: Vec::new(),
            properties: *properties,
            config,
            options,
            logger,
            persistent_depth: 0,
            capture: None,
            epoch: 0,
            flushed_frees: 0,
            age_due: 0,
            submit_cursor: None,
        }
    }
}

impl<S> MemoryManagement<S> {
    /// `mode`'s body: persistent windows nest, so a depth counts them.
    pub(crate) fn enter_mode(&mut self, mode: MemoryAllocationMode) {
        self.persistent_depth = match mode {
            MemoryAllocationMode::Persistent => self.persistent_depth.saturating_add(1),
            MemoryAllocationMode::Auto => self.persistent_depth.saturating_sub(1),
        };
    }

    /// `effective_mode`'s body: a capture window allocates as persistent.
    pub(crate) fn mode_now(&self) -> MemoryAllocationMode {
        if self.persistent_depth > 0 || self.capture.is_some() {
            MemoryAllocationMode::Persistent
        } else {
            MemoryAllocationMode::Auto
        }
    }
}

impl<S> fmt::Debug for MemoryManagement<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryManagement")
            .field("id", &self.id)
            .field("name", &self.options.name)
            .field("config", &self.config)
            .field("persistent_depth", &self.persistent_depth)
            .field("capturing", &self.capture.is_some())
            .field("live_slices", &self.core.tables.slots.live())
            .finish_non_exhaustive()
    }
}
