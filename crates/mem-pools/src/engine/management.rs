//! `MemoryManagement`'s whole public API, each method with an example.
//! The bodies of the longer ones are the engine's machinery beside this
//! file (`reserve.rs`, `access.rs`, `bind.rs`, `pins.rs`, `free_path.rs`,
//! `lifecycle.rs`, `capture.rs`, `reclaim.rs`, `relocation_plan.rs`,
//! `relocation_copy.rs`, `compaction.rs`, `sleep.rs`, `report.rs`), over
//! the pools (`pools/`) and their floor (`tables/`).

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use mem_storage::{ComputeStorage, StorageHandle};

use crate::capture::record::{CaptureRecord, CaptureState};
use crate::config::{
    MemoryAllocationMode, MemoryConfiguration, MemoryDeviceProperties, MemoryManagementOptions,
};
use crate::engine::state::MemoryManagement;
use crate::error::{BindRefused, InstallMemoryPoolsError, IoError, RelocationCopyError};
use crate::handles::handle_cell::ManagedMemoryHandle;
use crate::handles::keys::ManagedMemoryBinding;
use crate::handles::raw_pin::RawPin;
use crate::logger::ServerLogger;
use crate::pools::arena::sleep::{SleepContents, SleepReport};
use crate::relocation::{
    CompactionState, CopyQueue, Landed, RelocationOutcome, RelocationPlan, RelocationState,
    TargetRoom,
};
use crate::report::pools::MemoryReport;
use crate::report::stats::PoolStats;
use crate::report::usage::MemoryUsage;

impl<S: ComputeStorage> MemoryManagement<S> {
    /// Creates the engine over `storage` with the pools of `config` sized to
    /// the device limits in `properties`.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use mem_pools::{MemoryConfiguration, MemoryDeviceProperties, MemoryManagement, ServerLogger};
    ///
    /// let properties = MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 };
    /// let memory = MemoryManagement::from_configuration(
    ///     mem_storage::HostStorage::host(),
    ///     &properties,
    ///     MemoryConfiguration::SubSlices,
    ///     Arc::new(ServerLogger::default()),
    ///     Default::default(),
    /// );
    /// assert_eq!(memory.memory_usage().bytes_reserved, 0);
    /// ```
    pub fn from_configuration(
        storage: S,
        properties: &MemoryDeviceProperties,
        config: MemoryConfiguration,
        logger: Arc<ServerLogger>,
        options: MemoryManagementOptions,
    ) -> Self {
        Self::build(storage, properties, config, logger, options)
    }

    /// This manager's process-unique id (carried by its handles and bindings).
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(64)?;
    /// assert_eq!(handle.manager_id(), memory.id());
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Finds a spot in memory for `size` bytes and returns a handle to it.
    ///
    /// Zero bytes is valid (one alignment unit, a handle of size 0). Errors:
    /// [`IoError::InvalidSize`] when rounding overflows,
    /// [`IoError::BufferTooBig`] when no pool accepts it (Persistent mode and
    /// captures: above [`MemoryDeviceProperties::effective_max_page`]),
    /// [`IoError::CaptureWouldAllocate`] for a new page inside a capture
    /// after priming, [`IoError::Asleep`] between `sleep` and `wake`. On
    /// error nothing changes, except that a page-size growth the storage
    /// refused leaves the pool's empty current pages given back, as a
    /// cleanup would.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(1000)?;
    /// assert_eq!(handle.size(), 1000);
    /// assert!(memory.reserve(u64::MAX).is_err());
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn reserve(&mut self, size: u64) -> Result<ManagedMemoryHandle, IoError> {
        self.reserve_handle(size)
    }

    /// Change the mode of allocation. Persistent windows nest: `Persistent`
    /// opens one, `Auto` closes one (none open: no-op); the effective mode is
    /// Persistent while any is open, and during a capture.
    ///
    /// ```
    /// # use mem_pools::MemoryAllocationMode;
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// memory.mode(MemoryAllocationMode::Persistent);
    /// let weights = memory.reserve(4096)?; // an exact-fit persistent page
    /// memory.mode(MemoryAllocationMode::Auto);
    /// assert_eq!(memory.effective_mode(), MemoryAllocationMode::Auto);
    /// # drop(weights);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn mode(&mut self, mode: MemoryAllocationMode) {
        self.enter_mode(mode);
    }

    /// The mode new reservations use now.
    ///
    /// ```
    /// # use mem_pools::MemoryAllocationMode;
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// memory.capture_begin();
    /// assert_eq!(memory.effective_mode(), MemoryAllocationMode::Persistent);
    /// memory.capture_abort();
    /// assert_eq!(memory.effective_mode(), MemoryAllocationMode::Auto);
    /// ```
    pub fn effective_mode(&self) -> MemoryAllocationMode {
        self.mode_now()
    }

    /// The storage under the pools. Allocating through it bypasses the pools
    /// (untracked pages); use it to time deallocations (`flush`) or move bytes.
    ///
    /// ```
    /// use mem_storage::ComputeStorage;
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// memory.storage().flush()?;
    /// # Ok::<(), mem_storage::StorageError>(())
    /// ```
    pub fn storage(&mut self) -> &mut S {
        &mut self.storage
    }

    /// Bumped by every `install_pools` and relocation commit: a storage view
    /// (`get_storage`) cached under an older epoch may name a freed page.
    ///
    /// ```
    /// # use mem_pools::{MemoryConfiguration, MemoryDeviceProperties};
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let before = memory.layout_epoch();
    /// let properties = *memory.properties();
    /// memory.install_pools(MemoryConfiguration::ExclusivePages, &properties).unwrap();
    /// assert!(memory.layout_epoch() > before);
    /// ```
    pub fn layout_epoch(&self) -> u64 {
        self.epoch
    }

    /// The options this manager was built with.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// assert!(!memory.options().lazy_pages);
    /// ```
    pub fn options(&self) -> &MemoryManagementOptions {
        &self.options
    }

    /// The device properties this manager was built with.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// assert_eq!(memory.properties().alignment, 256);
    /// ```
    pub fn properties(&self) -> &MemoryDeviceProperties {
        &self.properties
    }

    /// The layout of the dynamic pools.
    ///
    /// ```
    /// # use mem_pools::MemoryConfiguration;
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// assert!(matches!(memory.configuration(), MemoryConfiguration::SubSlices));
    /// ```
    pub fn configuration(&self) -> &MemoryConfiguration {
        &self.config
    }

    /// The storage view of a binding (its page and bytes): where a lazy page
    /// gets its memory, so the view always names mapped memory.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(1000)?;
    /// let view = memory.get_storage(handle.binding())?;
    /// assert!(view.size() >= 1000);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn get_storage(&mut self, binding: ManagedMemoryBinding) -> Result<StorageHandle, IoError> {
        self.storage_view(binding)
    }

    /// The resource of bytes `offset_start..offset_end` (`None`: that end of
    /// the allocation), marked raw-out until [`Self::release_raw`]: one flag,
    /// the owner's. To pin for someone else use [`Self::raw_pin`] or
    /// [`Self::get_resource_pinned`].
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(1000)?;
    /// let _resource = memory.get_resource(handle.binding(), Some(256), None)?;
    /// assert_eq!(memory.raw_pins(handle.binding())?, 1); // the owner's flag
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn get_resource(
        &mut self,
        binding: ManagedMemoryBinding,
        offset_start: Option<u64>,
        offset_end: Option<u64>,
    ) -> Result<S::Resource, IoError> {
        self.resource_raw_out(binding, offset_start, offset_end)
    }

    /// The owner uses no raw address of it any more: clears `get_resource`'s
    /// flag (no-op when unset). Live [`RawPin`]s still hold the page.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(1000)?;
    /// memory.get_resource(handle.binding(), None, None)?;
    /// memory.release_raw(handle.binding())?;
    /// assert_eq!(memory.raw_pins(handle.binding())?, 0);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn release_raw(&mut self, binding: ManagedMemoryBinding) -> Result<(), IoError> {
        self.clear_raw_out(binding)
    }

    /// A [`RawPin`]: the page does not move while the guard lives, apart
    /// from the owner's flag and every other guard. Maps a lazy page first.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(1000)?;
    /// let pin = memory.raw_pin(handle.binding())?;
    /// assert_eq!(memory.raw_pins(handle.binding())?, 1);
    /// drop(pin); // on any thread; counted at the next call
    /// memory.drain_drops();
    /// assert_eq!(memory.raw_pins(handle.binding())?, 0);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn raw_pin(&mut self, binding: ManagedMemoryBinding) -> Result<RawPin, IoError> {
        self.pin_raw(binding)
    }

    /// [`Self::get_resource`] that pins with a [`RawPin`] instead of the
    /// owner's flag. On error nothing is pinned.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(1000)?;
    /// let (_resource, pin) = memory.get_resource_pinned(handle.binding(), None, None)?;
    /// assert_eq!(pin.binding(), handle.binding());
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn get_resource_pinned(
        &mut self,
        binding: ManagedMemoryBinding,
        offset_start: Option<u64>,
        offset_end: Option<u64>,
    ) -> Result<(S::Resource, RawPin), IoError> {
        let (resource, slice) = self.resource(binding, offset_start, offset_end)?;
        Ok((resource, self.guard(slice, binding)))
    }

    /// Live [`RawPin`]s on the allocation, plus one for the owner's flag; the
    /// page never moves while above 0 (undrained drops still count).
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(1000)?;
    /// let _a = memory.raw_pin(handle.binding())?;
    /// let _b = memory.raw_pin(handle.binding())?;
    /// assert_eq!(memory.raw_pins(handle.binding())?, 2);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn raw_pins(&self, binding: ManagedMemoryBinding) -> Result<u64, IoError> {
        let node = &self.core.tables.slices[self.resolve(&binding)?];
        Ok(node.raw_pins + u64::from(node.raw_out))
    }

    /// The cursor the allocation's last `bind` stamped (0 if never bound).
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let reserved = memory.reserve(1000)?;
    /// let assigned = memory.reserve(1000)?;
    /// let binding = assigned.binding();
    /// assert_eq!(memory.get_cursor(binding)?, 0);
    /// memory.bind(reserved, assigned.clone(), 7)?;
    /// assert_eq!(memory.get_cursor(binding)?, 7);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn get_cursor(&self, binding: ManagedMemoryBinding) -> Result<u64, IoError> {
        Ok(self.core.tables.cursor(self.resolve(&binding)?))
    }

    /// The pool holding the allocation, as its position in
    /// [`Self::memory_report`]'s `pools` (the persistent pool is the last).
    /// Lets a runtime that keeps per-allocation records of its own report
    /// them pool by pool.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(1000)?;
    /// let pool = memory.pool_of(handle.binding())?;
    /// assert_eq!(memory.memory_report().pools[pool].slices, 1);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn pool_of(&self, binding: ManagedMemoryBinding) -> Result<usize, IoError> {
        let page = self.core.tables.slices[self.resolve(&binding)?].page;
        let pool = self.core.tables.pages[page].pool as usize;
        Ok(pool.min(self.core.pools.len()))
    }

    /// Write `data` at the start of the allocation (at most its size).
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(3)?;
    /// memory.write(handle.binding(), b"abc")?;
    /// assert!(memory.write(handle.binding(), b"too long").is_err());
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn write(&mut self, binding: ManagedMemoryBinding, data: &[u8]) -> Result<(), IoError> {
        let view = self.fit(binding, data.len())?;
        Ok(self.storage.write(&view, data)?)
    }

    /// Read the first `out.len()` bytes of the allocation.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(3)?;
    /// memory.write(handle.binding(), b"abc")?;
    /// let mut back = [0; 2];
    /// memory.read(handle.binding(), &mut back)?;
    /// assert_eq!(&back, b"ab");
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn read(&mut self, binding: ManagedMemoryBinding, out: &mut [u8]) -> Result<(), IoError> {
        let view = self.fit(binding, out.len())?;
        Ok(self.storage.read(&view, out)?)
    }

    /// Hands the memory of `reserved` to `assigned` (whose old memory is
    /// freed) and stamps it with `cursor`; `reserved`'s name goes stale. The
    /// checks and errors are [`Self::try_bind`]'s. **A refusal drops both
    /// handles** (and may free `reserved`): see [`BindRefused`].
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let reserved = memory.reserve(1000)?;
    /// memory.write(reserved.binding(), b"new")?;
    /// let assigned = memory.reserve(1000)?;
    /// let binding = assigned.binding();
    /// memory.bind(reserved, assigned.clone(), 1)?;
    /// let mut back = [0; 3];
    /// memory.read(binding, &mut back)?;
    /// assert_eq!(&back, b"new");
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn bind(
        &mut self,
        reserved: ManagedMemoryHandle,
        assigned: ManagedMemoryHandle,
        cursor: u64,
    ) -> Result<(), IoError> {
        Ok(self.try_bind(reserved, assigned, cursor)?)
    }

    /// [`Self::bind`] that gives both handles back, untouched, in a
    /// [`BindRefused`] (its docs list the checks) when it refuses.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let reserved = memory.reserve(1000)?;
    /// let assigned = memory.reserve(1000)?;
    /// // `reserved` has another holder: refused, both handles come back.
    /// let other = reserved.clone();
    /// let refused = memory.try_bind(reserved, assigned.clone(), 1).unwrap_err();
    /// let (reserved, _assigned) = refused.into_handles();
    /// drop(other);
    /// memory.try_bind(reserved, assigned.clone(), 1).unwrap();
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn try_bind(
        &mut self,
        reserved: ManagedMemoryHandle,
        assigned: ManagedMemoryHandle,
        cursor: u64,
    ) -> Result<(), BindRefused> {
        self.rebind(reserved, assigned, cursor, false).map(drop)
    }

    /// [`Self::try_bind`] that keeps `assigned`'s old memory and returns it
    /// as a fresh handle (`None` when both are one allocation), for work
    /// still reading it; also refused with [`IoError::IndexExhausted`].
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let reserved = memory.reserve(1000)?;
    /// let assigned = memory.reserve(1000)?;
    /// let old = memory.try_bind_keeping(reserved, assigned.clone(), 1).unwrap();
    /// assert!(old.is_some());
    /// assert_eq!(memory.memory_usage().number_allocs, 2);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn try_bind_keeping(
        &mut self,
        reserved: ManagedMemoryHandle,
        assigned: ManagedMemoryHandle,
        cursor: u64,
    ) -> Result<Option<ManagedMemoryHandle>, BindRefused> {
        self.rebind(reserved, assigned, cursor, true)
    }

    /// The error [`Self::bind`] would return now, or `None`: the same checks,
    /// consuming nothing. Holders count as `bind` counts them.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let reserved = memory.reserve(1000)?;
    /// let assigned = memory.reserve(1000)?;
    /// assert!(memory.bind_would_refuse(&reserved, &assigned).is_none());
    /// let other = reserved.clone();
    /// assert!(memory.bind_would_refuse(&reserved, &assigned).is_some());
    /// # drop(other);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn bind_would_refuse(
        &mut self,
        reserved: &ManagedMemoryHandle,
        assigned: &ManagedMemoryHandle,
    ) -> Option<IoError> {
        self.drain();
        self.bind_refusal(reserved, assigned).err()
    }

    /// Whether a handle dropped since the last drain (one atomic load).
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// drop(memory.reserve(1000)?);
    /// assert!(memory.has_pending_drops());
    /// memory.drain_drops();
    /// assert!(!memory.has_pending_drops());
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn has_pending_drops(&self) -> bool {
        self.cells.has_pending()
    }

    /// Free now every allocation whose last handle dropped, and return how
    /// many. Usage and reports already count them as freed; the drain makes
    /// their room reusable and gives back the outdated pages they emptied.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(1000)?;
    /// drop(handle.clone());
    /// drop(handle); // the last holder
    /// assert_eq!(memory.memory_usage().number_allocs, 0); // counted at once
    /// assert_eq!(memory.drain_drops(), 1);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn drain_drops(&mut self) -> usize {
        let before = self.core.tables.slots.live();
        self.drain();
        before - self.core.tables.slots.live()
    }

    /// Give back pages deemed unnecessary: nothing during a capture; emptied
    /// outdated pages always; `explicit`: every empty page and idle arena
    /// chunk; else exclusive pages idle past their `dealloc_period`.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// drop(memory.reserve(1000)?);
    /// assert!(memory.memory_usage().bytes_reserved > 0); // the page is kept
    /// memory.cleanup(true);
    /// assert_eq!(memory.memory_usage().bytes_reserved, 0);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn cleanup(&mut self, explicit: bool) {
        self.give_back(explicit, false);
    }

    /// Give back the physical memory an explicit [`Self::cleanup`] gives
    /// back — empty pages, idle arena chunks, shed chunks kept for reuse —
    /// but keep an empty arena's address range. The range holds no
    /// physical memory, so giving it back frees nothing a failed
    /// allocation could use, and the retry after it would reserve it again
    /// (one `cuMemAddressFree` and one `cuMemAddressReserve` per failed
    /// allocation). It is the out-of-memory retry's step (PyTorch's
    /// release of cached blocks); nothing during a capture.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use mem_pools::{MemoryConfiguration, MemoryDeviceProperties, MemoryManagement, MemoryPoolOptions, PoolType};
    /// # use mem_storage::{HostResource, HostVirtualMemory, ResourceStorage, VirtualMemory};
    /// let vm = Arc::new(HostVirtualMemory::with_capacity(64 << 20).unwrap());
    /// let storage = ResourceStorage::new(HostResource::new()).with_virtual_memory(vm.clone());
    /// let arena = MemoryPoolOptions {
    ///     pool_type: PoolType::VirtualArena { max_slice_size: 32 << 20, range_size: 1 << 30, release_threshold: 0 },
    ///     dealloc_period: None,
    /// };
    /// let config = MemoryConfiguration::Custom { pool_options: vec![arena] };
    /// # let properties = MemoryDeviceProperties { max_page_size: 1 << 30, alignment: 256 };
    /// let mut memory = MemoryManagement::from_configuration(storage, &properties, config, Default::default(), Default::default());
    /// drop(memory.reserve(4 << 20)?);
    /// memory.release_cached();
    /// assert_eq!(vm.vm_stats().physical_bytes, 0); // no physical memory left
    /// assert_eq!(vm.vm_stats().live_ranges(), 1); // the arena's range stays
    /// memory.cleanup(true);
    /// assert_eq!(vm.vm_stats().live_ranges(), 0); // an explicit cleanup gives it back
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn release_cached(&mut self) {
        self.give_back(true, true);
    }

    /// Replace the dynamic pools with ones built from `config` (their marks
    /// reset; the persistent pool untouched), after a full cleanup.
    ///
    /// ```
    /// # use mem_pools::MemoryConfiguration;
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let properties = *memory.properties();
    /// memory.install_pools(MemoryConfiguration::ExclusivePages, &properties).unwrap();
    /// let handle = memory.reserve(1000)?;
    /// // Live memory in a dynamic pool: refused, nothing changes.
    /// assert!(memory.install_pools(MemoryConfiguration::SubSlices, &properties).is_err());
    /// # drop(handle);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn install_pools(
        &mut self,
        config: MemoryConfiguration,
        properties: &MemoryDeviceProperties,
    ) -> Result<(), InstallMemoryPoolsError> {
        self.replace_pools(config, properties)
    }

    /// Begin a graph capture (see [`CaptureState`]); inside one, only the
    /// mode stays forced.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// memory.capture_begin();
    /// assert!(memory.capture_state().active);
    /// # memory.capture_abort();
    /// ```
    pub fn capture_begin(&mut self) {
        self.begin_capture();
    }

    /// End priming: drop the clones warmup retained (no-op when not priming).
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// memory.capture_begin();
    /// drop(memory.reserve(1000)?); // warmup: retained while priming
    /// assert_eq!(memory.memory_usage().number_allocs, 1);
    /// memory.capture_priming_end();
    /// assert_eq!(memory.memory_usage().number_allocs, 0);
    /// # memory.capture_abort();
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn capture_priming_end(&mut self) {
        self.end_priming();
    }

    /// End the capture and return a pin handle (a holder of its own) to
    /// every extent the window touched. Empty if no capture was active.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// memory.capture_begin();
    /// let recorded = memory.reserve(1000)?;
    /// memory.capture_priming_end();
    /// let pins = memory.capture_end();
    /// assert_eq!(pins.len(), 1);
    /// assert!(pins[0].is_pin());
    /// # drop(recorded);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn capture_end(&mut self) -> Vec<ManagedMemoryHandle> {
        self.pin_touched()
    }

    /// End the capture, pinning nothing (for a graph thrown away).
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// memory.capture_begin();
    /// drop(memory.reserve(1000)?);
    /// memory.capture_abort();
    /// assert!(!memory.capture_state().active);
    /// assert_eq!(memory.memory_usage().number_allocs, 0);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn capture_abort(&mut self) {
        self.abort_capture();
    }

    /// Plain data about the capture window.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// memory.capture_begin();
    /// let _a = memory.reserve(1000)?;
    /// let state = memory.capture_state();
    /// assert!(state.active && state.priming);
    /// assert_eq!(state.touched, 1);
    /// # memory.capture_abort();
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn capture_state(&self) -> CaptureState {
        self.capture
            .as_ref()
            .map_or_else(CaptureState::default, CaptureRecord::state)
    }

    /// Whether any pool holds outdated pages.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// assert!(!memory.has_outdated()); // only page-size growth outdates pages
    /// ```
    pub fn has_outdated(&self) -> bool {
        self.core.pools.iter().any(|p| !p.outdated.is_empty())
    }

    /// Plain data for relocation triggers (O(pools + outdated pages)).
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let state = memory.relocation_state();
    /// assert!(!state.has_outdated && !state.out_of_page_sizes);
    /// ```
    pub fn relocation_state(&self) -> RelocationState {
        self.measure_relocation()
    }

    /// Reserve a target for every live slice of each movable outdated page,
    /// cheapest page first (all or nothing per page). Empty during a capture.
    ///
    /// ```
    /// # use mem_pools::TargetRoom;
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let plan = memory.plan_relocation(TargetRoom::Held);
    /// assert!(plan.is_empty()); // no outdated page
    /// ```
    pub fn plan_relocation(&mut self, room: TargetRoom) -> RelocationPlan {
        self.outdated_plan(room)
    }

    /// Plan to empty sparse current pages of sliced pools into held room
    /// (never a new page). Empty during a capture.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let _kept = memory.reserve(1000)?;
    /// let plan = memory.plan_compaction();
    /// assert_eq!(plan.pages(), 0); // one page: nowhere to move it
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn plan_compaction(&mut self) -> RelocationPlan {
        self.compaction_plan()
    }

    /// Plain data for a compaction trigger (O(pools + outdated pages)).
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let _kept = memory.reserve(1000)?;
    /// let state = memory.compaction_state();
    /// assert_eq!(state.current_pages_with_live_data, 1);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn compaction_state(&self) -> CompactionState {
        self.measure_compaction()
    }

    /// Copy every planned move through `queue`; only completed copies land.
    /// A failed wait quarantines sources and targets ([`RelocationCopyError`]).
    ///
    /// ```
    /// # use mem_pools::{StorageCopyQueue, TargetRoom};
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let plan = memory.plan_relocation(TargetRoom::MayAllocate);
    /// let landed = memory.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    /// assert_eq!(landed.moves(), 0);
    /// ```
    pub fn copy_relocation(
        &mut self,
        plan: RelocationPlan,
        queue: &mut dyn CopyQueue<S>,
    ) -> Result<Landed, RelocationCopyError> {
        self.copy_moves(plan, queue)
    }

    /// Hand every landed allocation to its target, free emptied pages and
    /// flush; [`IoError::ForeignRelocation`] for another manager's copies.
    ///
    /// ```
    /// # use mem_pools::{StorageCopyQueue, TargetRoom};
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let plan = memory.plan_relocation(TargetRoom::MayAllocate);
    /// let landed = memory.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    /// let outcome = memory.commit_relocation(landed)?;
    /// assert_eq!(outcome.moved_slices, 0);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn commit_relocation(&mut self, landed: Landed) -> Result<RelocationOutcome, IoError> {
        self.commit_moves(landed)
    }

    /// Release the physical memory of every arena (the memory, not the
    /// addresses: `engine/sleep.rs` says how), keeping every address; with
    /// [`SleepContents::Preserve`] what live slices hold is copied to host
    /// memory first. The storage's queued work is waited for before
    /// anything is unmapped.
    ///
    /// # Errors
    /// [`IoError::Asleep`] when already asleep; [`IoError::Storage`]
    /// `Unsupported` while a capture window is open (sleeping would unmap
    /// what the recording uses). A storage refusal (a read, an unmap) stops
    /// it: what was released stays released, the memory counts as asleep,
    /// and `wake` maps it back.
    ///
    /// ```
    /// # use mem_pools::{IoError, SleepContents};
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let report = memory.sleep(SleepContents::Preserve)?;
    /// assert_eq!(report.released_bytes, 0); // paged pools keep their pages
    /// assert!(matches!(memory.reserve(1000), Err(IoError::Asleep { .. })));
    /// memory.wake()?;
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn sleep(&mut self, contents: SleepContents) -> Result<SleepReport, IoError> {
        self.sleep_arenas(contents)
    }

    /// Map fresh chunks under every slot live arena slices touch and copy
    /// back what `sleep` preserved; the memory is awake again. Returns the
    /// bytes mapped. No-op (0) when not asleep.
    ///
    /// # Errors
    /// A storage refusal (out of memory: another process holds the memory
    /// now) stops it: what was mapped stays mapped, the memory stays asleep,
    /// and calling `wake` again maps the rest.
    ///
    /// ```
    /// # use mem_pools::SleepContents;
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// assert_eq!(memory.wake()?, 0); // not asleep: no-op
    /// memory.sleep(SleepContents::Discard)?;
    /// memory.wake()?;
    /// assert!(memory.reserve(1000).is_ok());
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn wake(&mut self) -> Result<u64, IoError> {
        self.wake_arenas()
    }

    /// Whether the arenas are asleep (between `sleep` and `wake`).
    ///
    /// ```
    /// # use mem_pools::SleepContents;
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// memory.sleep(SleepContents::Discard)?;
    /// assert!(memory.is_asleep());
    /// memory.wake()?;
    /// assert!(!memory.is_asleep());
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn is_asleep(&self) -> bool {
        self.core.arenas.asleep.is_some()
    }

    /// Re-claim exactly the extent `view` names — `view.size()` bytes at
    /// `view.offset()` of page `view.id`, as [`Self::get_storage`] handed
    /// it out — if it is free now, and return a *pin handle* to it (see
    /// [`ManagedMemoryHandle::is_pin`]): a new allocation whose memory does
    /// not move while any clone of the handle lives, freed when the last
    /// clone drops. It is the only holder (`can_mut()` is true).
    ///
    /// `None`, changing nothing, when the page is not one of this manager's
    /// live pages (released, another manager's, never handed out), when any
    /// byte of the extent is live, quarantined or on an outdated page, or
    /// when a persistent or exclusive page's free slice is not exactly that
    /// extent. Allocates no storage, so it is legal inside a capture window
    /// (the window does not count it as touched). O(1): a hash lookup of
    /// the page and the slice-start index of the offset.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(1000)?;
    /// let view = memory.get_storage(handle.binding())?;
    /// assert!(memory.reclaim_extent(&view).is_none()); // still live
    /// drop(handle);
    /// let pin = memory.reclaim_extent(&view).expect("free again");
    /// assert!(pin.is_pin() && pin.can_mut());
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn reclaim_extent(&mut self, view: &StorageHandle) -> Option<ManagedMemoryHandle> {
        self.reclaim_view(view)
    }

    /// The current memory usage, a handle dropped a moment ago counted as
    /// freed (O(pools), plus O(drops) while drops wait for the drain).
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let handle = memory.reserve(1000)?;
    /// let usage = memory.memory_usage();
    /// assert_eq!((usage.number_allocs, usage.bytes_in_use), (1, 1000));
    /// drop(handle);
    /// assert_eq!(memory.memory_usage().bytes_in_use, 0); // before any drain
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn memory_usage(&self) -> MemoryUsage {
        self.usage_now()
    }

    /// A per-pool report in routing order, current as [`Self::memory_usage`].
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let _handle = memory.reserve(1000)?;
    /// let report = memory.memory_report();
    /// assert_eq!(report.usage, memory.memory_usage());
    /// assert_eq!(report.pools.iter().map(|p| p.slices).sum::<u64>(), 1);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn memory_report(&self) -> MemoryReport {
        self.report_now()
    }

    /// Print the report to standard output (and log it at debug level).
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// memory.print_memory_usage(); // the text of `memory.to_string()`
    /// ```
    pub fn print_memory_usage(&self) {
        self.print_report();
    }

    /// PyTorch-style statistics (O(pools) for the largest free block).
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let _handle = memory.reserve(1000)?;
    /// let stats = memory.stats();
    /// assert_eq!(stats.allocation_count.current, 1);
    /// assert!(stats.largest_free_block > 0);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn stats(&self) -> PoolStats {
        self.stats_now()
    }

    /// [`Self::stats`] in O(1), without a copy: `largest_free_block` and
    /// `chunks.cached_bytes` read 0 here.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let _handle = memory.reserve(1000)?;
    /// assert_eq!(memory.counters().requested_bytes.current, 1000);
    /// assert_eq!(memory.counters().largest_free_block, 0);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn counters(&self) -> &PoolStats {
        &self.core.tables.stats
    }

    /// Report the stream's progress: `submitted` work items so far, of
    /// which the first `completed` are known complete (cursors that never
    /// go back; `completed ≤ submitted`). Slots going idle from now on are
    /// stamped with `submitted`, and an idle chunk may be unmapped once
    /// `completed` reaches every stamp on it (`pools/arena/stream_order.rs`).
    /// O(arena pages).
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// memory.set_stream_progress(10, 8); // 10 submitted, 8 done
    /// memory.set_stream_progress(12, 12);
    /// assert!(!memory.arena_chunks_waiting());
    /// ```
    pub fn set_stream_progress(&mut self, submitted: u64, completed: u64) {
        let (a, t, p) = self.core.arena_parts();
        a.set_progress(t, p, submitted, completed.min(submitted));
    }

    /// Share the stream's live submit counter (the count of work items
    /// submitted so far, never going back), so that a batch of handles
    /// dropped on other threads is stamped with the count read after the
    /// batch is taken instead of the one [`Self::set_stream_progress`]
    /// reported when the call began.
    ///
    /// Why: a runtime enqueues work, counts it, then drops the handles it
    /// used, and another thread's call may take that drop after it read
    /// the cursors. Stamped with the older count, the freed slot would look
    /// complete once the work counted before it is, and an arena could
    /// unmap its chunk under the work that used it (a device fault on
    /// CUDA). Without a shared counter, the reported cursor is used.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// let submitted = Arc::new(AtomicU64::new(0));
    /// memory.set_submit_cursor(submitted.clone());
    /// submitted.fetch_add(1, Ordering::Release); // the runtime enqueued work
    /// ```
    pub fn set_submit_cursor(&mut self, cursor: Arc<AtomicU64>) {
        self.submit_cursor = Some(cursor);
    }

    /// Whether an idle arena chunk waits for the stream's work before it
    /// can be given back (an out-of-memory retry synchronizes the stream
    /// first when it does). O(slots of the arena ranges): an
    /// out-of-memory path, not the hot one.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// assert!(!memory.arena_chunks_waiting()); // no arena pool here
    /// ```
    pub fn arena_chunks_waiting(&self) -> bool {
        (self.core.arenas).arena_chunks_waiting(&self.core.tables, &self.core.pools)
    }

    /// Set every statistics peak to its current level.
    ///
    /// ```
    /// # let mut memory = mem_pools::MemoryManagement::from_configuration(mem_storage::HostStorage::host(), &mem_pools::MemoryDeviceProperties { max_page_size: 1 << 20, alignment: 256 }, mem_pools::MemoryConfiguration::SubSlices, Default::default(), Default::default());
    /// drop(memory.reserve(1000)?);
    /// memory.drain_drops();
    /// assert_eq!(memory.stats().requested_bytes.peak, 1000);
    /// memory.reset_peaks();
    /// assert_eq!(memory.stats().requested_bytes.peak, 0);
    /// # Ok::<(), mem_pools::IoError>(())
    /// ```
    pub fn reset_peaks(&mut self) {
        self.core.tables.stats.reset_peaks();
    }
}
