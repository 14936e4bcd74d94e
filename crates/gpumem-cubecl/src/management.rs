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
    ///
    /// ```
    /// use cubecl_ir::MemoryDeviceProperties;
    /// use cubecl_server::memory_management::MemoryConfiguration;
    /// use cubecl_server::storage::BytesStorage;
    /// use gpumem_cubecl::{MemoryManagement, MemoryManagementOptions};
    ///
    /// let memory = MemoryManagement::from_configuration(
    ///     BytesStorage::default(),
    ///     &MemoryDeviceProperties::new(1 << 27, 32),
    ///     MemoryConfiguration::default(), // Adaptive: gpumem's SubSlices
    ///     Default::default(),
    ///     MemoryManagementOptions::new("main"),
    /// );
    /// assert_eq!((memory.bytes_allocated(), memory.memory_report().usage().bytes_reserved), (0, 0));
    /// ```
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
    ///
    /// ```
    /// use cubecl_server::memory_management::MemoryAllocationMode;
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// memory.mode(MemoryAllocationMode::Persistent);
    /// let weights = memory.reserve(1024, PageUpdate::Allow, &mut failures)?;
    /// memory.mode(MemoryAllocationMode::Auto); // closes the window
    /// let activations = memory.reserve(1024, PageUpdate::Allow, &mut failures)?;
    /// assert_eq!(memory.memory_report().persistent.usage.bytes_in_use, 1024);
    /// # drop((weights, activations));
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
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
    ///
    /// ```
    /// use cubecl_server::memory_management::Cleanup;
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// let handle = memory.reserve(1 << 20, PageUpdate::Allow, &mut failures)?;
    /// drop(handle);
    /// memory.cleanup(Cleanup::Explicit, &mut failures);
    /// assert_eq!(memory.bytes_allocated(), 0);
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
    pub fn cleanup(&mut self, cleanup: Cleanup, failures: &mut ErrorGraph) {
        self.sweep(failures);
        self.engine.cleanup(cleanup == Cleanup::Explicit);
    }

    /// The cursor the last [`bind`](Self::bind) stamped on the allocation.
    ///
    /// ```
    /// use cubecl_server::memory_management::ManagedMemoryHandle;
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// let reserved = memory.reserve(64, PageUpdate::Allow, &mut failures)?;
    /// let assigned = ManagedMemoryHandle::new();
    /// memory.bind(reserved, assigned.clone(), 7, &mut failures)?;
    /// assert_eq!(memory.get_cursor(assigned.binding())?, 7);
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
    pub fn get_cursor(&self, binding: ManagedMemoryBinding) -> Result<u64, IoError> {
        Ok(self.entries.find(binding.descriptor())?.cursor)
    }

    /// The storage handle (`{id, offset, size}` in CubeCL's storage) of the
    /// allocation behind `binding`.
    ///
    /// ```
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// let handle = memory.reserve(1000, PageUpdate::Allow, &mut failures)?;
    /// let storage = memory.get_storage(handle.binding())?;
    /// assert_eq!(storage.size(), 1000);
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
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
    ///
    /// ```
    /// use cubecl_server::storage::ComputeStorage;
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// assert_eq!(memory.bytes_allocated(), 0);
    /// let handle = memory.reserve(1000, PageUpdate::Allow, &mut failures)?;
    /// assert!(memory.bytes_allocated() >= 1000); // a whole page
    /// assert_eq!(memory.bytes_allocated(), memory.storage().bytes_allocated());
    /// # drop(handle);
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
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
    ///
    /// ```
    /// use cubecl_server::memory_management::MemoryLocation;
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), cubecl_server::memory_management::MemoryConfiguration::ExclusivePages, Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// let recorded = memory.reserve(1024, PageUpdate::Allow, &mut failures)?;
    /// let bytes = memory.get_storage(recorded.clone().binding())?;
    /// let guard = memory.guard(recorded.descriptor().location()).expect("an allocation is there");
    /// drop(recorded);
    /// let other = memory.reserve(1024, PageUpdate::Allow, &mut failures)?;
    /// assert_ne!(memory.get_storage(other.binding())?.id, bytes.id, "the guarded bytes were reused");
    /// assert!(memory.guard(MemoryLocation::uninit()).is_none());
    /// # drop(guard);
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
    pub fn guard(&mut self, location: MemoryLocation) -> Option<PageGuard> {
        match self.entries.at(location) {
            Some(entry) => Some(PageGuard::page(&entry.guard)),
            None => self.guard_given_back(location),
        }
    }

    /// The resource behind `binding`, holding the binding for as long as it
    /// lives (which keeps the allocation in place).
    ///
    /// ```
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// let handle = memory.reserve(100, PageUpdate::Allow, &mut failures)?;
    /// let managed = memory.managed_resource(handle.clone().binding(), None, None)?;
    /// drop(handle);
    /// assert_eq!(memory.memory_report().usage().number_allocs, 1, "the resource holds it");
    /// assert_eq!(managed.resource().read().len(), 100);
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
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
    ///
    /// ```
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// let handle = memory.reserve(100, PageUpdate::Allow, &mut failures)?;
    /// let mut trimmed = memory.get_resource(handle.clone().binding(), Some(10), Some(20))?;
    /// assert_eq!(trimmed.read().len(), 70);
    /// trimmed.write()[..3].copy_from_slice(b"abc");
    /// let whole = memory.get_resource(handle.binding(), None, None)?;
    /// assert_eq!(&whole.read()[10..13], b"abc");
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
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
    ///
    /// ```
    /// use cubecl_server::server::IoError;
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// let handle = memory.reserve(1000, PageUpdate::Allow, &mut failures)?;
    /// assert_eq!(memory.get_storage(handle.binding())?.size(), 1000);
    /// let needs_a_page = memory.reserve(16 << 20, PageUpdate::Forbidden, &mut failures);
    /// assert!(matches!(needs_a_page, Err(IoError::PageUpdateForbidden { .. })));
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
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
    ///
    /// ```
    /// use cubecl_server::storage::ComputeStorage;
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// let raw = memory.storage().alloc(4096)?; // not the pools'
    /// assert_eq!(memory.storage().bytes_allocated(), 4096);
    /// assert_eq!(memory.memory_report().usage().bytes_reserved, 0);
    /// # memory.storage().dealloc(raw.id);
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
    pub fn storage(&mut self) -> &mut Storage {
        self.engine.storage().inner()
    }

    /// Everything this memory holds, pool by pool, in CubeCL's shape:
    /// gpumem's pools in routing order, each as the CubeCL kind that means
    /// the same (`report.rs` says which), the persistent pool apart, and
    /// `dedicated` an empty `Direct` pool. Current right after a drop.
    ///
    /// ```
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// let kept = memory.reserve(300, PageUpdate::Allow, &mut failures)?;
    /// let dropped = memory.reserve(500, PageUpdate::Allow, &mut failures)?;
    /// assert_eq!(memory.memory_report().usage().bytes_in_use, 800);
    /// drop(dropped);
    /// assert_eq!(memory.memory_report().usage().bytes_in_use, 300);
    /// # drop(kept);
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
    pub fn memory_report(&self) -> MemoryPoolsReport {
        self.cube_report()
    }

    /// Whether emptying the outdated pages is wanted: only while something
    /// is outdated and the pools changed since a relocation last moved
    /// nothing; `ArenaFull` when a pool has no page size left to grow to,
    /// `UnderPressure` when the device states a capacity, else `Nothing`.
    ///
    /// ```
    /// use cubecl_server::memory_management::relocation::RelocationNeed;
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32).with_max_memory(1 << 30), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// assert_eq!(memory.relocation_need(), RelocationNeed::Nothing);
    /// let old = memory.reserve(1 << 20, PageUpdate::Allow, &mut failures)?;
    /// let grown = memory.reserve(3 << 20, PageUpdate::Allow, &mut failures)?; // outgrows 2 MiB pages
    /// assert!(matches!(memory.relocation_need(), RelocationNeed::UnderPressure { capacity: 0x4000_0000, .. }));
    /// # drop((old, grown));
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
    pub fn relocation_need(&self) -> RelocationNeed {
        self.relocation_wanted()
    }

    /// Whether a growth left pages behind for a relocation to empty.
    ///
    /// ```
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// let old = memory.reserve(1 << 20, PageUpdate::Allow, &mut failures)?;
    /// assert!(!memory.has_outdated());
    /// let grown = memory.reserve(3 << 20, PageUpdate::Allow, &mut failures)?; // outgrows 2 MiB pages
    /// assert!(memory.has_outdated());
    /// # drop((old, grown));
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
    pub fn has_outdated(&self) -> bool {
        self.engine.has_outdated()
    }

    /// Empty the outdated pages into the current ones through `copier`, so
    /// they go back to the device. Under `MemoryPressure` the targets use
    /// only room already held; otherwise a target may take a new page.
    /// What must not move (a binding out, a graph's guard) is pinned for
    /// the length of it.
    ///
    /// ```
    /// use cubecl_server::memory_management::relocation::{HostCopies, RelocationReason};
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// let old = memory.reserve(1 << 20, PageUpdate::Allow, &mut failures)?;
    /// memory.get_resource(old.clone().binding(), None, Some((1 << 20) - 4))?.write().copy_from_slice(b"kept");
    /// let grown = memory.reserve(3 << 20, PageUpdate::Allow, &mut failures)?; // `old`'s page is outdated
    /// memory.relocate(&mut HostCopies, RelocationReason::Explicit, &mut failures);
    /// assert!(!memory.has_outdated());
    /// assert_eq!(&memory.get_resource(old.binding(), None, None)?.read()[..4], b"kept");
    /// # drop(grown);
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
    pub fn relocate(
        &mut self,
        copier: &mut dyn CopyQueue<Storage>,
        reason: RelocationReason,
        failures: &mut ErrorGraph,
    ) {
        self.relocate_outdated(copier, reason, failures);
    }

    /// Print out a report of the current memory usage.
    ///
    /// ```
    /// # struct Capture(std::sync::Mutex<String>);
    /// # impl log::Log for Capture {
    /// #     fn enabled(&self, _: &log::Metadata) -> bool { true }
    /// #     fn log(&self, record: &log::Record) { self.0.lock().unwrap().push_str(&record.args().to_string()) }
    /// #     fn flush(&self) {}
    /// # }
    /// # static LOGGED: Capture = Capture(std::sync::Mutex::new(String::new()));
    /// # log::set_logger(&LOGGED).unwrap();
    /// # log::set_max_level(log::LevelFilter::Info);
    /// # let logged = || LOGGED.0.lock().unwrap().clone();
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// let handle = memory.reserve(64, PageUpdate::Allow, &mut failures)?;
    /// memory.print_memory_usage(); // at `log`'s info level
    /// assert!(logged().contains("Number of allocations: 1"));
    /// # drop(handle);
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
    pub fn print_memory_usage(&self) {
        log::info!("{}", self.memory_report().usage());
    }

    /// Hand the allocation of `reserved` to `assigned` (a handle the client
    /// made), stamped with `cursor`; `reserved`'s name goes stale. Whatever
    /// failure claimed the allocation's bytes is released.
    ///
    /// ```
    /// use cubecl_server::memory_management::ManagedMemoryHandle;
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// let reserved = memory.reserve(64, PageUpdate::Allow, &mut failures)?;
    /// let stale = reserved.clone();
    /// let assigned = ManagedMemoryHandle::new();
    /// memory.bind(reserved, assigned.clone(), 3, &mut failures)?;
    /// assert_eq!(memory.get_storage(assigned.binding())?.size(), 64);
    /// assert!(memory.get_cursor(stale.binding()).is_err(), "the reserved name is stale");
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
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
    ///
    /// ```
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// # let failure = failures.insert(cubecl_server::server::ServerError::Generic { reason: "a launch failed".into(), backtrace: cubecl_environment::backtrace::BackTrace::capture() });
    /// let handle = memory.reserve(100, PageUpdate::Allow, &mut failures)?;
    /// let binding = handle.binding();
    /// memory.taint(&binding, 0..50, failure, &mut failures);
    /// assert_eq!(memory.failure(&binding, 40..60), Some(failure));
    /// assert_eq!(memory.failure(&binding, 50..100), None);
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
    pub fn failure(&self, binding: &ManagedMemoryBinding, range: Range<u64>) -> Option<FailureId> {
        let entry = self.entries.find(binding.descriptor()).ok()?;
        entry.tainted.failure(&range)
    }

    /// Point `range` of the allocation behind `binding` at `failure` (a
    /// binding this memory does not hold is left alone).
    ///
    /// ```
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// # let failure = failures.insert(cubecl_server::server::ServerError::Generic { reason: "a launch failed".into(), backtrace: cubecl_environment::backtrace::BackTrace::capture() });
    /// let handle = memory.reserve(100, PageUpdate::Allow, &mut failures)?;
    /// let binding = handle.binding();
    /// memory.taint(&binding, 0..50, failure, &mut failures);
    /// assert_eq!(memory.failure(&binding, 0..1), Some(failure));
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
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
    ///
    /// ```
    /// # use cubecl_server::memory_management::{ErrorGraph, PageUpdate};
    /// # let mut memory = gpumem_cubecl::MemoryManagement::from_configuration(cubecl_server::storage::BytesStorage::default(), &cubecl_ir::MemoryDeviceProperties::new(1 << 27, 32), Default::default(), Default::default(), gpumem_cubecl::MemoryManagementOptions::new("doc"));
    /// # let mut failures = ErrorGraph::default();
    /// # let failure = failures.insert(cubecl_server::server::ServerError::Generic { reason: "a launch failed".into(), backtrace: cubecl_environment::backtrace::BackTrace::capture() });
    /// let handle = memory.reserve(100, PageUpdate::Allow, &mut failures)?;
    /// let binding = handle.binding();
    /// memory.taint(&binding, 0..50, failure, &mut failures);
    /// memory.written(&binding, 0..25, &mut failures);
    /// assert_eq!(memory.failure(&binding, 0..25), None);
    /// assert_eq!(memory.failure(&binding, 25..50), Some(failure));
    /// # Ok::<(), cubecl_server::server::IoError>(())
    /// ```
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
