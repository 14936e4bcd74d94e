//! `MemoryManagement`'s public API: building, reserving, reaching and
//! binding memory, the free path and cleanup here; what moves or pins
//! memory in `api_moves.rs`, looking in and stream progress in
//! `api_observe.rs`; the
//! bodies of the longer ones live beside their noun (`engine/` for
//! reserving, reaching memory and the free path, `handles/`, `capture/`,
//! `relocation/`, `report/`). Three calls stay in the arena files for now:
//! `sleep`, `wake` and `is_asleep` (`arena/sleep.rs`) and `reclaim_extent`
//! (`capture/reclaim.rs`).

use std::sync::Arc;

use mem_storage::{ComputeStorage, StorageHandle};

use crate::config::{
    MemoryAllocationMode, MemoryConfiguration, MemoryDeviceProperties, MemoryManagementOptions,
};
use crate::engine::state::MemoryManagement;
use crate::error::{BindRefused, InstallMemoryPoolsError, IoError};
use crate::handles::handle_cell::ManagedMemoryHandle;
use crate::handles::keys::ManagedMemoryBinding;
use crate::handles::raw_pin::RawPin;
use crate::logger::ServerLogger;

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
        Self::build(storage, properties, config, logger, options)
    }

    /// This manager's process-unique id (carried by its handles and bindings).
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
    pub fn reserve(&mut self, size: u64) -> Result<ManagedMemoryHandle, IoError> {
        self.reserve_handle(size)
    }

    /// Change the mode of allocation. Persistent windows nest: `Persistent`
    /// opens one, `Auto` closes one (none open: no-op); the effective mode is
    /// Persistent while any is open, and during a capture.
    pub fn mode(&mut self, mode: MemoryAllocationMode) {
        self.persistent_depth = match mode {
            MemoryAllocationMode::Persistent => self.persistent_depth.saturating_add(1),
            MemoryAllocationMode::Auto => self.persistent_depth.saturating_sub(1),
        };
    }

    /// The mode new reservations use now.
    pub fn effective_mode(&self) -> MemoryAllocationMode {
        if self.persistent_depth > 0 || self.capture.is_some() {
            MemoryAllocationMode::Persistent
        } else {
            MemoryAllocationMode::Auto
        }
    }

    /// The storage under the pools. Allocating through it bypasses the pools
    /// (untracked pages); use it to time deallocations (`flush`) or move bytes.
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

    /// The layout of the dynamic pools.
    pub fn configuration(&self) -> &MemoryConfiguration {
        &self.config
    }

    /// The storage view of a binding (its page and bytes): where a lazy page
    /// gets its memory, so the view always names mapped memory.
    pub fn get_storage(&mut self, binding: ManagedMemoryBinding) -> Result<StorageHandle, IoError> {
        self.storage_view(binding)
    }

    /// The resource of bytes `offset_start..offset_end` (`None`: that end of
    /// the allocation), marked raw-out until [`Self::release_raw`]: one flag,
    /// the owner's. To pin for someone else use [`Self::raw_pin`] or
    /// [`Self::get_resource_pinned`].
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
    pub fn release_raw(&mut self, binding: ManagedMemoryBinding) -> Result<(), IoError> {
        self.clear_raw_out(binding)
    }

    /// A [`RawPin`]: the page does not move while the guard lives, apart
    /// from the owner's flag and every other guard. Maps a lazy page first.
    pub fn raw_pin(&mut self, binding: ManagedMemoryBinding) -> Result<RawPin, IoError> {
        self.get_storage(binding)?;
        let slice = self.resolve(&binding)?;
        Ok(self.guard(slice, binding))
    }

    /// [`Self::get_resource`] that pins with a [`RawPin`] instead of the
    /// owner's flag. On error nothing is pinned.
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
    pub fn raw_pins(&self, binding: ManagedMemoryBinding) -> Result<u64, IoError> {
        let node = &self.core.slices[self.resolve(&binding)?];
        Ok(node.raw_pins + u64::from(node.raw_out))
    }

    /// The cursor the allocation's last `bind` stamped (0 if never bound).
    pub fn get_cursor(&self, binding: ManagedMemoryBinding) -> Result<u64, IoError> {
        Ok(self.core.cursor(self.resolve(&binding)?))
    }

    /// The pool holding the allocation, as its position in
    /// [`Self::memory_report`]'s `pools` (the persistent pool is the last).
    /// Lets a runtime that keeps per-allocation records of its own report
    /// them pool by pool.
    pub fn pool_of(&self, binding: ManagedMemoryBinding) -> Result<usize, IoError> {
        let page = self.core.slices[self.resolve(&binding)?].page;
        let pool = self.core.pages[page].pool as usize;
        Ok(pool.min(self.core.pools.len()))
    }

    /// Write `data` at the start of the allocation (at most its size).
    pub fn write(&mut self, binding: ManagedMemoryBinding, data: &[u8]) -> Result<(), IoError> {
        let view = self.fit(binding, data.len())?;
        Ok(self.storage.write(&view, data)?)
    }

    /// Read the first `out.len()` bytes of the allocation.
    pub fn read(&mut self, binding: ManagedMemoryBinding, out: &mut [u8]) -> Result<(), IoError> {
        let view = self.fit(binding, out.len())?;
        Ok(self.storage.read(&view, out)?)
    }

    /// Hands the memory of `reserved` to `assigned` (whose old memory is
    /// freed) and stamps it with `cursor`; `reserved`'s name goes stale. The
    /// checks and errors are [`Self::try_bind`]'s. **A refusal drops both
    /// handles** (and may free `reserved`): see [`BindRefused`].
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
    pub fn bind_would_refuse(
        &mut self,
        reserved: &ManagedMemoryHandle,
        assigned: &ManagedMemoryHandle,
    ) -> Option<IoError> {
        self.drain();
        self.bind_refusal(reserved, assigned).err()
    }

    /// Whether a handle dropped since the last drain (one atomic load).
    pub fn has_pending_drops(&self) -> bool {
        self.cells.has_pending()
    }

    /// Free now every allocation whose last handle dropped, and return how
    /// many. Usage and reports already count them as freed; the drain makes
    /// their room reusable and gives back the outdated pages they emptied.
    pub fn drain_drops(&mut self) -> usize {
        let before = self.core.slots.live();
        self.drain();
        before - self.core.slots.live()
    }

    /// Give back pages deemed unnecessary: nothing during a capture; emptied
    /// outdated pages always; `explicit`: every empty page and idle arena
    /// chunk; else exclusive pages idle past their `dealloc_period`.
    pub fn cleanup(&mut self, explicit: bool) {
        self.give_back(explicit);
    }

    /// Replace the dynamic pools with ones built from `config` (their marks
    /// reset; the persistent pool untouched), after a full cleanup.
    pub fn install_pools(
        &mut self,
        config: MemoryConfiguration,
        properties: &MemoryDeviceProperties,
    ) -> Result<(), InstallMemoryPoolsError> {
        self.replace_pools(config, properties)
    }
}
