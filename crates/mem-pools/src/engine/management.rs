//! `MemoryManagement`'s public API, every method in this one file; the
//! bodies of the longer ones live beside their noun (`engine/` for
//! reserving, reaching memory and the free path, `handles/`, `capture/`,
//! `relocation/`, `report/`). Three calls stay in the arena files for now:
//! `sleep`, `wake` and `is_asleep` (`arena/sleep.rs`) and `reclaim_extent`
//! (`capture/reclaim.rs`).

use std::sync::Arc;

use mem_storage::{ComputeStorage, StorageHandle};

use crate::arena::sleep::{SleepContents, SleepReport};
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

    /// Begin a graph capture (see [`CaptureState`]); inside one, only the
    /// mode stays forced.
    pub fn capture_begin(&mut self) {
        if self.capture.is_none() {
            self.drain();
            self.capture = Some(CaptureRecord::new());
        }
    }

    /// End priming: drop the clones warmup retained (no-op when not priming).
    pub fn capture_priming_end(&mut self) {
        self.end_priming();
    }

    /// End the capture and return a pin handle (a holder of its own) to
    /// every extent the window touched. Empty if no capture was active.
    pub fn capture_end(&mut self) -> Vec<ManagedMemoryHandle> {
        self.pin_touched()
    }

    /// End the capture, pinning nothing (for a graph thrown away).
    pub fn capture_abort(&mut self) {
        if let Some(record) = self.capture.take() {
            drop(record);
            self.drain();
        }
    }

    /// Plain data about the capture window.
    pub fn capture_state(&self) -> CaptureState {
        self.capture
            .as_ref()
            .map_or_else(CaptureState::default, CaptureRecord::state)
    }

    /// Whether any pool holds outdated pages.
    pub fn has_outdated(&self) -> bool {
        self.core.pools.iter().any(|p| !p.outdated.is_empty())
    }

    /// Plain data for relocation triggers (O(pools + outdated pages)).
    pub fn relocation_state(&self) -> RelocationState {
        self.measure_relocation()
    }

    /// Reserve a target for every live slice of each movable outdated page,
    /// cheapest page first (all or nothing per page). Empty during a capture.
    pub fn plan_relocation(&mut self, room: TargetRoom) -> RelocationPlan {
        self.outdated_plan(room)
    }

    /// Plan to empty sparse current pages of sliced pools into held room
    /// (never a new page). Empty during a capture.
    pub fn plan_compaction(&mut self) -> RelocationPlan {
        self.compaction_plan()
    }

    /// Plain data for a compaction trigger (O(pools + outdated pages)).
    pub fn compaction_state(&self) -> CompactionState {
        self.measure_compaction()
    }

    /// Copy every planned move through `queue`; only completed copies land.
    /// A failed wait quarantines sources and targets ([`RelocationCopyError`]).
    pub fn copy_relocation(
        &mut self,
        plan: RelocationPlan,
        queue: &mut dyn CopyQueue<S>,
    ) -> Result<Landed, RelocationCopyError> {
        self.copy_moves(plan, queue)
    }

    /// Hand every landed allocation to its target, free emptied pages and
    /// flush; [`IoError::ForeignRelocation`] for another manager's copies.
    pub fn commit_relocation(&mut self, landed: Landed) -> Result<RelocationOutcome, IoError> {
        self.commit_moves(landed)
    }

    /// The current memory usage, a handle dropped a moment ago counted as
    /// freed (O(pools), plus O(drops) while drops wait for the drain).
    pub fn memory_usage(&self) -> MemoryUsage {
        self.usage_now()
    }

    /// A per-pool report in routing order, current as [`Self::memory_usage`].
    pub fn memory_report(&self) -> MemoryReport {
        self.report_now()
    }

    /// Print the report to standard output (and log it at debug level).
    pub fn print_memory_usage(&self) {
        let text = self.to_string();
        self.logger.report(&text);
        println!("{text}");
    }

    /// PyTorch-style statistics (O(pools) for the largest free block).
    pub fn stats(&self) -> PoolStats {
        self.stats_now()
    }

    /// [`Self::stats`] in O(1), without a copy: `largest_free_block` and
    /// `chunks.cached_bytes` read 0 here.
    pub fn counters(&self) -> &PoolStats {
        &self.core.stats
    }

    /// Report the stream's progress: `submitted` work items so far, of
    /// which the first `completed` are known complete (cursors that never
    /// go back; `completed ≤ submitted`). Slots going idle from now on are
    /// stamped with `submitted`, and an idle chunk may be unmapped once
    /// `completed` reaches every stamp on it (`arena/stream_order.rs`).
    /// O(arena pages).
    pub fn set_stream_progress(&mut self, submitted: u64, completed: u64) {
        self.core.set_progress(submitted, completed.min(submitted));
    }

    /// Whether an idle arena chunk waits for the stream's work before it
    /// can be given back (an out-of-memory retry synchronizes the stream
    /// first when it does). O(slots of the arena ranges): an
    /// out-of-memory path, not the hot one.
    pub fn arena_chunks_waiting(&self) -> bool {
        self.core.arena_chunks_waiting()
    }

    /// Set every statistics peak to its current level.
    pub fn reset_peaks(&mut self) {
        self.core.stats.reset_peaks();
    }

    /// Release the physical memory of every arena (the memory, not the addresses: `arena/sleep.rs` says how),
    /// keeping every address; with [`SleepContents::Preserve`] what live
    /// slices hold is copied to host memory first. The storage's queued work
    /// is waited for before anything is unmapped.
    ///
    /// # Errors
    /// [`IoError::Asleep`] when already asleep; [`IoError::Storage`]
    /// `Unsupported` while a capture window is open (sleeping would unmap
    /// what the recording uses). A storage refusal (a read, an unmap) stops
    /// it: what was released stays released, the memory counts as asleep,
    /// and `wake` maps it back.
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
    pub fn wake(&mut self) -> Result<u64, IoError> {
        self.wake_arenas()
    }

    /// Whether the arenas are asleep (between `sleep` and `wake`).
    pub fn is_asleep(&self) -> bool {
        self.core.asleep.is_some()
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
    /// (the window does not count it as touched). O(1): a hash lookup of the page and the slice-start index of the offset.
    pub fn reclaim_extent(&mut self, view: &StorageHandle) -> Option<ManagedMemoryHandle> {
        self.reclaim_view(view)
    }
}
