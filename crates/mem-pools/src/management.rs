//! `MemoryManagement`: the engine's front — construction, reserve, modes,
//! the drop-queue drain, and access to the storage.

use std::fmt;
use std::sync::Arc;

use mem_storage::ComputeStorage;

use crate::capture::CaptureRecord;
use crate::carve::Allowance;
use crate::config::{
    MemoryAllocationMode, MemoryConfiguration, MemoryDeviceProperties, MemoryManagementOptions,
};
use crate::core::Core;
use crate::error::IoError;
use crate::handle::{Dropped, ManagedMemoryHandle, next_manager_id};
use crate::handle_cell::CellPool;
use crate::logger::ServerLogger;
use crate::pool::{PERSISTENT, Pool};
use crate::slots::NIL;

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
}

impl<S: ComputeStorage> MemoryManagement<S> {
    /// Creates the engine over `storage` with the pools of `config` sized to
    /// the device limits in `properties`.
    pub fn from_configuration(
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
        core.max_chunk_bytes = options.arena_max_chunk.unwrap_or(crate::DEFAULT_MAX_CHUNK);
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
        }
    }

    /// This manager's process-unique id (carried by its handles and bindings).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Finds a spot in memory for `size` bytes and returns a handle to it.
    ///
    /// Zero bytes is valid: it takes one alignment unit and returns a handle
    /// of size 0 whose binding resolves to an empty view. A size whose
    /// rounding overflows is [`IoError::InvalidSize`]; one no pool accepts is
    /// [`IoError::BufferTooBig`] — in Persistent mode (and during a capture)
    /// that is one whose aligned size exceeds the device's largest page
    /// ([`MemoryDeviceProperties::effective_max_page`]): below it a persistent
    /// allocation gets a page of exactly its aligned size; inside a capture window after priming, one
    /// that needs a new page is [`IoError::CaptureWouldAllocate`]. On error
    /// nothing changes — with one exception: a page-size growth gives the
    /// pool's empty current pages back before asking for the grown page
    /// when the storage's `mem_info` says it fits only then, and a storage
    /// that refuses it anyway (a fault, another stream taking the room)
    /// finds them given back, as a cleanup would have.
    pub fn reserve(&mut self, size: u64) -> Result<ManagedMemoryHandle, IoError> {
        self.drain();
        if self.core.asleep.is_some() {
            return Err(IoError::Asleep {
                operation: "reserve",
                sleeping_bytes: self.core.live_chunk_bytes(),
            });
        }
        self.core.clock += 1;
        self.age_exclusive_pools();
        let pool = if self.effective_mode() == MemoryAllocationMode::Persistent {
            PERSISTENT
        } else {
            self.core.route(size)?
        };
        let allow = self.allowance();
        let reserved = self.reserve_into(pool, size, allow);
        // Growth may have released emptied outdated pages: give them back now.
        self.settle();
        let (handle, slice) = reserved?;
        self.logger.reserve(size, pool);
        self.touch(slice, &handle);
        Ok(handle)
    }

    /// Reserve in one pool and wrap the slice in a fresh handle.
    pub(crate) fn reserve_into(
        &mut self,
        pool: u32,
        size: u64,
        allow: Allowance,
    ) -> Result<(ManagedMemoryHandle, u32), IoError> {
        self.core.capacity(size)?;
        let key = self.core.slots.claim(NIL)?;
        let slice = match self
            .core
            .reserve_in(&mut self.storage, pool, size, key.slot, allow)
        {
            Ok(slice) => slice,
            Err(err) => {
                self.core.slots.abandon(key);
                return Err(err);
            }
        };
        self.core.slots.fill(key, slice);
        let handle = ManagedMemoryHandle::new(&mut self.cells, key, size);
        Ok((handle, slice))
    }

    /// Change the mode of allocation.
    ///
    /// Persistent windows nest: `Persistent` opens one, `Auto` closes one
    /// (closing with none open is a no-op), and the effective mode stays
    /// Persistent while any window is open — an inner `Auto` does not end an
    /// outer window. A capture forces Persistent on top of the windows.
    pub fn mode(&mut self, mode: MemoryAllocationMode) {
        match mode {
            MemoryAllocationMode::Persistent => {
                self.persistent_depth = self.persistent_depth.saturating_add(1)
            }
            MemoryAllocationMode::Auto => {
                self.persistent_depth = self.persistent_depth.saturating_sub(1)
            }
        }
    }

    /// The mode new reservations use now.
    pub fn effective_mode(&self) -> MemoryAllocationMode {
        if self.persistent_depth > 0 || self.capture.is_some() {
            MemoryAllocationMode::Persistent
        } else {
            MemoryAllocationMode::Auto
        }
    }

    /// Fetch the storage used by the memory manager.
    ///
    /// Allocating through it directly bypasses the pools (its pages are not
    /// tracked); use it to time deallocations (`flush`) or move bytes.
    pub fn storage(&mut self) -> &mut S {
        &mut self.storage
    }

    /// Bumped by every `install_pools` and relocation commit: a storage view
    /// (`get_storage`) cached under an older epoch may name a freed page.
    pub fn layout_epoch(&self) -> u64 {
        self.epoch
    }

    /// The options this manager was built with.
    pub fn options(&self) -> &MemoryManagementOptions {
        &self.options
    }

    /// The device properties this manager was built with.
    pub fn properties(&self) -> &MemoryDeviceProperties {
        &self.properties
    }

    /// What reservations may do now (capture windows restrict both).
    pub(crate) fn allowance(&self) -> Allowance {
        match &self.capture {
            None => Allowance {
                allocate: true,
                release: true,
            },
            Some(c) => Allowance {
                allocate: c.priming,
                release: false,
            },
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
            .field("live_slices", &self.core.slots.live())
            .finish_non_exhaustive()
    }
}
