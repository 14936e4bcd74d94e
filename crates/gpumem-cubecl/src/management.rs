//! `MemoryManagement`'s whole public API: every function of CubeCL's
//! `cubecl_server::memory_management::MemoryManagement` (0.12.0-pre.1),
//! with the same signature, served by gpumem's engine. The machinery lives
//! beside it: the state (`state.rs`), reports in CubeCL's shape
//! (`report.rs`), relocation through CubeCL's copy queue
//! (`relocation.rs`), the handle table (`entries.rs`), adopting the
//! engine's handles (`adopt.rs`).

use std::ops::Range;
use std::sync::atomic::Ordering;

use cubecl_environment::backtrace::BackTrace;
use cubecl_environment::sync::Arc;
use cubecl_ir::MemoryDeviceProperties;
use cubecl_server::config::memory::{MemoryLogLevel, PersistentMemory};
use cubecl_server::logging::ServerLogger;
use cubecl_server::memory_management::relocation::{CopyQueue, RelocationNeed, RelocationReason};
use cubecl_server::memory_management::{
    Cleanup, ErrorGraph, FailureId, ManagedMemoryBinding, ManagedMemoryHandle,
    MemoryAllocationMode, MemoryConfiguration, MemoryLocation, MemoryPoolsReport, PageGuard,
    PageUpdate,
};
use cubecl_server::server::IoError;
use cubecl_server::storage::{ComputeStorage, ManagedResource, StorageHandle};

use crate::errors::{not_found, to_cube};
use crate::options::MemoryManagementOptions;
use crate::state::MemoryManagement;

impl<Storage: ComputeStorage> MemoryManagement<Storage> {
    /// Creates the memory over `storage` with the layout `config` names,
    /// sized to `properties`: CubeCL's `Adaptive` is gpumem's `SubSlices`
    /// (paged pools: CubeCL's storage has no virtual memory), and
    /// `ExclusivePages` is gpumem's `ExclusivePages`.
    pub fn from_configuration(
        storage: Storage,
        properties: &MemoryDeviceProperties,
        config: MemoryConfiguration,
        logger: Arc<ServerLogger>,
        options: MemoryManagementOptions,
    ) -> Self {
        Self::build(storage, properties, config, logger, options)
    }

    /// Change the mode of allocation. Windows nest as in CubeCL: a
    /// `Persistent` or `Dedicated` call opens one, an `Auto` call closes the
    /// innermost, and the innermost open window decides the mode. The
    /// persistent-memory config decides what a `Persistent` window puts in
    /// force (`Disabled` and `Enforced` keep the configured mode).
    pub fn mode(&mut self, mode: MemoryAllocationMode) {
        match mode {
            MemoryAllocationMode::Auto => {
                self.windows.pop();
            }
            MemoryAllocationMode::Persistent => self.windows.push(match self.config {
                PersistentMemory::Enabled | PersistentMemory::SizeMatch => mode,
                PersistentMemory::Disabled | PersistentMemory::Enforced => self.base_mode,
            }),
            MemoryAllocationMode::Dedicated => self.windows.push(mode),
        }
        let mode = self.windows.last().copied().unwrap_or(self.base_mode);
        self.logger.log_memory(
            |level| !matches!(level, MemoryLogLevel::Disabled),
            || {
                format!(
                    "[{}] Setting memory allocation mode: from {:?} => {mode:?}",
                    self.name, self.mode
                )
            },
        );
        self.mode = mode;
        self.sync_engine_mode();
    }

    /// Give back what the pools do not need: `Periodic` frees what gpumem's
    /// own policy says is unused (emptied outdated pages, exclusive pages idle
    /// past their period), `Explicit` every empty page, flushed to the device.
    pub fn cleanup(&mut self, cleanup: Cleanup, failures: &mut ErrorGraph) {
        self.sweep(failures);
        self.engine.cleanup(cleanup == Cleanup::Explicit);
    }

    /// The cursor the last [`bind`](Self::bind) stamped on the allocation.
    pub fn get_cursor(&self, binding: ManagedMemoryBinding) -> Result<u64, IoError> {
        Ok(self.entries.find(binding.descriptor())?.cursor)
    }

    /// The storage handle (`{id, offset, size}` in CubeCL's storage) of the
    /// allocation behind `binding`.
    pub fn get_storage(&mut self, binding: ManagedMemoryBinding) -> Result<StorageHandle, IoError> {
        let entry = self.entries.find(binding.descriptor())?;
        let (memory, size) = (entry.memory.binding(), entry.size);
        let view = self
            .engine
            .get_storage(memory)
            .map_err(|error| to_cube(error, size, None))?;
        self.engine
            .storage()
            .view(&view)
            .ok_or_else(|| not_found("the page behind the allocation is gone"))
    }

    /// The bytes this memory holds from the device right now.
    pub fn bytes_allocated(&self) -> u64 {
        self.allocated.load(Ordering::Relaxed)
    }

    /// Keep the allocation `location` names as it is for as long as the
    /// guard lives: not given back, not reused, not relocated, even once its
    /// last handle drops. `None` when no allocation is at `location` now.
    ///
    /// CubeCL guards the whole page; gpumem guards the allocation the
    /// recorded launch was given (a graph only replays against those bytes).
    /// An allocation given back since (a temporary freed inside the
    /// recording) has its bytes re-claimed exactly, if nothing took them.
    pub fn guard(&mut self, location: MemoryLocation) -> Option<PageGuard> {
        match self.entries.at(location) {
            Some(entry) => Some(PageGuard::page(&entry.guard)),
            None => self.guard_given_back(location),
        }
    }

    /// The resource behind `binding`, holding the binding for as long as it
    /// lives (which keeps the allocation in place).
    pub fn managed_resource(
        &mut self,
        binding: ManagedMemoryBinding,
        offset_start: Option<u64>,
        offset_end: Option<u64>,
    ) -> Result<ManagedResource<Storage::Resource>, IoError> {
        let resource = self.get_resource(binding.clone(), offset_start, offset_end)?;
        Ok(ManagedResource::new(binding, resource))
    }

    /// The resource of CubeCL's storage at the allocation behind `binding`,
    /// `offset_start` bytes in from its start and `offset_end` in from its end.
    pub fn get_resource(
        &mut self,
        binding: ManagedMemoryBinding,
        offset_start: Option<u64>,
        offset_end: Option<u64>,
    ) -> Result<Storage::Resource, IoError> {
        let handle = self.get_storage(binding)?;
        let handle = match offset_start {
            Some(offset) => handle.offset_start(offset),
            None => handle,
        };
        let handle = match offset_end {
            Some(offset) => handle.offset_end(offset),
            None => handle,
        };
        self.storage().get(&handle)
    }

    /// Reserve `size` bytes, changing the pages held only as far as `update`
    /// allows: `Allow` runs the periodic cleanup first, `AddOnly` does not,
    /// `Forbidden` fails with [`IoError::PageUpdateForbidden`] where a new
    /// page would be needed.
    pub fn reserve(
        &mut self,
        size: u64,
        update: PageUpdate,
        failures: &mut ErrorGraph,
    ) -> Result<ManagedMemoryHandle, IoError> {
        // O(1): a few entries are looked at here; all of them only before
        // a page would be added (below), so memory a dropped handle left is
        // still reused before the pools grow. While a trace is recorded,
        // all of them (O(entries)), so its frees come before this alloc.
        if self.trace.is_some() {
            self.sweep(failures);
        } else {
            self.sweep_some(failures);
        }
        if update == PageUpdate::Allow {
            self.engine.cleanup(false);
        }
        let padding_before = self.engine.memory_usage().bytes_padding;
        // First from the pages held. A refusal there changes nothing (no
        // page may be added, so none is given back either).
        self.engine.storage().set_forbid_alloc(true);
        let held = self.engine.reserve(size);
        self.engine.storage().set_forbid_alloc(false);
        self.engine.storage().take_error();
        if let Ok(memory) = held {
            return Ok(self.adopt(memory, size, padding_before)?.0);
        }
        // The pools would grow, or cannot serve it: give back every
        // allocation nothing holds first, then ask as the caller allows.
        self.sweep(failures);
        let padding_before = self.engine.memory_usage().bytes_padding;
        self.engine
            .storage()
            .set_forbid_alloc(update == PageUpdate::Forbidden);
        let reserved = self.engine.reserve(size);
        self.engine.storage().set_forbid_alloc(false);
        let kept = self.engine.storage().take_error();
        let memory = match reserved {
            Ok(memory) => memory,
            Err(_) if update == PageUpdate::Forbidden && kept.is_none() => {
                return Err(IoError::PageUpdateForbidden {
                    size,
                    backtrace: BackTrace::capture(),
                });
            }
            Err(error) => return Err(to_cube(error, size, kept)),
        };
        Ok(self.adopt(memory, size, padding_before)?.0)
    }

    /// CubeCL's storage under the pools. Allocating through it bypasses them.
    pub fn storage(&mut self) -> &mut Storage {
        self.engine.storage().inner()
    }

    /// Everything this memory holds, pool by pool, in CubeCL's shape:
    /// gpumem's pools in routing order, each as the CubeCL kind that means
    /// the same (`report.rs` says which), the persistent pool apart, and
    /// `dedicated` an empty `Direct` pool. Current right after a drop.
    pub fn memory_report(&self) -> MemoryPoolsReport {
        self.cube_report()
    }

    /// Whether emptying the outdated pages is wanted: only while something
    /// is outdated and the pools changed since a relocation last moved
    /// nothing; `ArenaFull` when a pool has no page size left to grow to,
    /// `UnderPressure` when the device states a capacity, else `Nothing`.
    pub fn relocation_need(&self) -> RelocationNeed {
        self.relocation_wanted()
    }

    /// Whether a growth left pages behind for a relocation to empty.
    pub fn has_outdated(&self) -> bool {
        self.engine.has_outdated()
    }

    /// Empty the outdated pages into the current ones through `copier`, so
    /// they go back to the device. Under `MemoryPressure` the targets use
    /// only room already held; otherwise a target may take a new page.
    /// What must not move (a binding out, a graph's guard) is pinned for
    /// the length of it.
    pub fn relocate(
        &mut self,
        copier: &mut dyn CopyQueue<Storage>,
        reason: RelocationReason,
        failures: &mut ErrorGraph,
    ) {
        self.relocate_outdated(copier, reason, failures);
    }

    /// Print out a report of the current memory usage.
    pub fn print_memory_usage(&self) {
        log::info!("{}", self.memory_report().usage());
    }

    /// Hand the allocation of `reserved` to `assigned` (a handle the client
    /// made), stamped with `cursor`; `reserved`'s name goes stale. Whatever
    /// failure claimed the allocation's bytes is released.
    pub fn bind(
        &mut self,
        reserved: ManagedMemoryHandle,
        assigned: ManagedMemoryHandle,
        cursor: u64,
        failures: &mut ErrorGraph,
    ) -> Result<(), IoError> {
        let entry = self.entries.find_mut(reserved.descriptor())?;
        assigned
            .descriptor()
            .update_location(reserved.descriptor().location());
        entry.cursor = cursor;
        entry.tainted.clear(failures);
        entry.handle = assigned;
        Ok(())
    }

    /// The failure claiming any byte of `range` of the allocation behind
    /// `binding`, if one does; `None` for a binding this memory does not hold.
    pub fn failure(&self, binding: &ManagedMemoryBinding, range: Range<u64>) -> Option<FailureId> {
        let entry = self.entries.find(binding.descriptor()).ok()?;
        entry.tainted.failure(&range)
    }

    /// Point `range` of the allocation behind `binding` at `failure` (a
    /// binding this memory does not hold is left alone).
    pub fn taint(
        &mut self,
        binding: &ManagedMemoryBinding,
        range: Range<u64>,
        failure: FailureId,
        failures: &mut ErrorGraph,
    ) {
        if let Ok(entry) = self.entries.find_mut(binding.descriptor()) {
            entry.tainted.taint(range, failure, failures);
        }
    }

    /// `range` of the allocation behind `binding` has a writer again: release
    /// every claim on those bytes, and only those.
    pub fn written(
        &mut self,
        binding: &ManagedMemoryBinding,
        range: Range<u64>,
        failures: &mut ErrorGraph,
    ) {
        if let Ok(entry) = self.entries.find_mut(binding.descriptor()) {
            entry.tainted.written(range, failures);
        }
    }
}
