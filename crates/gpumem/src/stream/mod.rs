//! `Stream`: every public method of a stream, in this one file. Bodies
//! longer than a few lines live beside, named after what they hold:
//! `reserve.rs`, `out_of_memory.rs` (the one out-of-memory retry and its
//! report), `cross_stream.rs` (the cursor rule, `bind`, `record_use`),
//! `guards.rs`. Moves are in `relocation/`, capture in `capture/`.

mod cross_stream;
mod guards;
mod launch;
mod out_of_memory;
mod reserve;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mem_capture::{GraphBackend, HostGraphBackend};
use mem_pools::{ManagedMemoryHandle, MemoryAllocationMode, MemoryReport};
use mem_relocate::{RelocationReason, RelocationSummary};
use mem_storage::{StorageHandle, StreamId};

use crate::backend::StreamMemory;
use crate::capture::{CaptureWarmup, StreamCapture};
use crate::error::Result;
use crate::relocation;
use crate::stats::MemoryStats;

pub use crate::shared::Stream;
pub use cross_stream::StreamWait;
pub use guards::{DevicePtrGuard, PersistentWindow};
pub use launch::LaunchGuard;

impl Stream {
    /// This stream's index on its device (0 is the default stream).
    pub fn index(&self) -> usize {
        self.index
    }

    /// This stream's id in the device's resource.
    pub fn id(&self) -> StreamId {
        self.shared().id
    }

    /// The device this stream belongs to.
    pub fn device(&self) -> crate::Device {
        crate::Device::new(self.device.clone())
    }

    /// Begin a launch that uses `buffers` (those of other streams get a
    /// [`Stream::record_use`]): until it is submitted or dropped no memory
    /// moves, so what [`LaunchGuard::view`] reads is what the work uses.
    ///
    /// # Errors
    /// A stale or foreign handle; `GpuMemError::LaunchOpen` when this thread
    /// already holds a launch of the device.
    pub fn launch(&self, buffers: &[&ManagedMemoryHandle]) -> Result<LaunchGuard<'_>> {
        launch::launch(self, buffers)
    }

    /// Count one launch-like operation; returns its number (1, 2, ...).
    /// Prefer [`Stream::launch`], which also keeps memory from moving.
    pub fn submit(&self) -> u64 {
        self.shared().submitted.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Operations submitted so far (the stream's operation counter).
    pub fn cursor(&self) -> u64 {
        self.shared().submitted()
    }

    /// Operations known to be complete.
    pub fn completed(&self) -> u64 {
        self.shared().completed()
    }

    /// Declare that operations up to `op` have completed (a runtime calls
    /// this when its event for `op` fires). Never moves backwards.
    ///
    /// # Errors
    /// [`crate::GpuMemError::CompletionAhead`] for an operation not yet submitted.
    pub fn complete_through(&self, op: u64) -> Result<()> {
        self.device.complete_through(self.index, op)
    }

    /// Wait for all of this stream's work, then mark every operation complete.
    pub fn synchronize(&self) -> Result<()> {
        self.device.synchronize_stream(self.index)
    }

    /// Reserve `size` bytes on this stream. A refusal by the device or its
    /// budget gives every stream's cached memory back (relocating outdated
    /// pages unless a graph records) and is tried once more.
    ///
    /// # Errors
    /// [`crate::GpuMemError::OutOfMemory`] with the report when the retry fails for
    /// lack of memory; the pool engine's error for anything else (a size no
    /// pool accepts, a capture window that would allocate, ...).
    pub fn reserve(&self, size: u64) -> Result<ManagedMemoryHandle> {
        reserve::reserve(self, size)
    }

    /// Hand `reserved`'s memory to `assigned` and stamp it with the number
    /// of the next operation this stream submits (bind, then launch); returns
    /// the stamp. Memory another stream's work uses ([`Stream::record_use`])
    /// is never freed by a bind: it stays held ([`Stream::held_bytes`]) until
    /// that work completes. A refused bind changes nothing in the engine.
    ///
    /// # Errors
    /// A stale handle or one of another stream; `IoError::SharedReserved`
    /// when `reserved` has another holder (a clone, a graph's pin);
    /// `IoError::AssignedPinned` when a captured graph pins `assigned`.
    pub fn bind(
        &self,
        reserved: ManagedMemoryHandle,
        assigned: ManagedMemoryHandle,
    ) -> Result<u64> {
        cross_stream::bind(self, reserved, assigned)
    }

    /// Stamp `handle` for the next operation without moving memory
    /// (`bind` of a handle to itself).
    pub fn stamp(&self, handle: &ManagedMemoryHandle) -> Result<u64> {
        self.bind(handle.clone(), handle.clone())
    }

    /// The stamp of `handle`'s last `bind` (0 if never bound), read on the
    /// stream that reserved it.
    pub fn get_cursor(&self, handle: &ManagedMemoryHandle) -> Result<u64> {
        cross_stream::get_cursor(self, handle)
    }

    /// Whether this stream must wait before using `handle`: `Some` when the
    /// operation it was last bound for, on the stream that owns it, was
    /// submitted and is not known complete; `None` on its own stream.
    pub fn must_wait(&self, handle: &ManagedMemoryHandle) -> Result<Option<StreamWait>> {
        cross_stream::must_wait(self, handle)
    }

    /// Order this stream's later work after `wait`'s stream's work (CUDA: an
    /// event recorded there, waited here; nothing to order on in-order
    /// backends).
    pub fn wait_for(&self, wait: StreamWait) -> Result<()> {
        cross_stream::wait_for(self, wait)
    }

    /// Record that work on this stream uses `handle` (reserved on another
    /// stream), like PyTorch's `record_stream`: its memory is not reused
    /// until this stream completes the work submitted when the handle's last
    /// holder drops. No-op on its own stream.
    pub fn record_use(&self, handle: &ManagedMemoryHandle) -> Result<()> {
        cross_stream::record_use(self, handle)
    }

    /// Bytes whose handles were dropped but that this stream still holds
    /// for other streams' unfinished work.
    pub fn held_bytes(&self) -> u64 {
        self.shared().lock().held_bytes()
    }

    /// The storage view of `handle`'s memory (page id, offset, size); take a
    /// fresh one after a relocation.
    ///
    /// # Errors
    /// A stale or foreign handle; a lazy page's first touch refused twice
    /// (once more after cached memory is given back) is
    /// [`crate::GpuMemError::OutOfMemory`].
    pub fn view(&self, handle: &ManagedMemoryHandle) -> Result<StorageHandle> {
        out_of_memory::on_owner(self, handle, |st, binding| st.engine.get_storage(binding))
    }

    /// Write `data` at the start of `handle`'s memory (on its own stream).
    ///
    /// # Errors
    /// As [`Stream::view`], and data longer than the allocation.
    pub fn write(&self, handle: &ManagedMemoryHandle, data: &[u8]) -> Result<()> {
        out_of_memory::on_owner(self, handle, |st, binding| st.engine.write(binding, data))
    }

    /// Read the first `out.len()` bytes of `handle`'s memory.
    ///
    /// # Errors
    /// As [`Stream::view`], and a buffer longer than the allocation.
    pub fn read(&self, handle: &ManagedMemoryHandle, out: &mut [u8]) -> Result<()> {
        out_of_memory::on_owner(self, handle, |st, binding| st.engine.read(binding, out))
    }

    /// The device address of `handle`'s memory, pinned (never moved) while
    /// the guard lives. While the device sleeps the address is the one it
    /// will have after `wake`.
    ///
    /// # Errors
    /// As [`Stream::view`]; nothing is pinned on error.
    pub fn device_ptr(&self, handle: &ManagedMemoryHandle) -> Result<DevicePtrGuard> {
        guards::device_ptr(self, handle)
    }

    /// Open (`Persistent`) or close (`Auto`) a persistent-allocation window.
    pub fn mode(&self, mode: MemoryAllocationMode) {
        self.device.run(self.index, |st| st.engine.mode(mode));
    }

    /// Persistent mode on this stream until the guard drops (weights, graph
    /// memory: exact-fit pages never relocated). Windows nest.
    pub fn persistent(&self) -> PersistentWindow {
        PersistentWindow::open(self.device.clone(), vec![self.index])
    }

    /// Give back every page this stream holds that nothing uses. Gives
    /// nothing back while any stream records a graph.
    pub fn cleanup(&self) {
        let device = &self.device;
        device.run(self.index, |st| device.cleanup(st));
    }

    /// Move what this stream holds on outdated pages (every stream's work is
    /// finished first; refused while any stream records).
    pub fn relocate(&self, reason: RelocationReason) -> Result<RelocationSummary> {
        relocation::relocate_stream(&self.device, self.index, reason)
    }

    /// Relocate this stream's memory if its trigger asks for it: the device
    /// has less than a page to spare, or its pools are about to run out of
    /// page sizes (never again on a shape a relocation could not change).
    pub fn relocate_when_wanted(&self) -> Result<RelocationSummary> {
        relocation::relocate_when_wanted(&self.device, self.index)
    }

    /// Relocate this stream's outdated pages into held room, then give back
    /// every page it holds empty.
    pub fn reclaim(&self) -> Result<RelocationSummary> {
        relocation::reclaim_stream(&self.device, self.index)
    }

    /// Begin a capture on this stream with the host graph backend.
    ///
    /// # Errors
    /// As [`Stream::begin_capture_with`].
    pub fn begin_capture(&self) -> Result<CaptureWarmup<HostGraphBackend>> {
        self.begin_capture_with(HostGraphBackend::new())
    }

    /// Begin a capture with `backend`: refused if any stream records; every
    /// stream's outdated memory is relocated; the stream's pool opens its
    /// window and the stream is marked recording.
    ///
    /// # Errors
    /// `CaptureError::Streams(RelocationError::Recording { .. })` while
    /// another stream records, before anything changes.
    pub fn begin_capture_with<B: GraphBackend>(&self, backend: B) -> Result<CaptureWarmup<B>> {
        CaptureWarmup::begin(self.capture_streams(), backend)
    }

    /// This stream as mem-capture's `CaptureStreams`, for driving
    /// `mem_capture::Capture` directly.
    pub fn capture_streams(&self) -> StreamCapture {
        StreamCapture::new(self.clone())
    }

    /// The CUDA stream this stream's memory is ordered on; `None` off CUDA.
    pub fn cuda_stream(&self) -> Option<Arc<cudarc::driver::CudaStream>> {
        let cuda = self.device.cuda.as_ref()?;
        cuda.cuda_stream(self.id()).ok()
    }

    /// Run `f` on this stream's pool engine (everything the
    /// CubeCL-compatible `MemoryManagement` offers), the stream locked while
    /// it runs: use the engine `f` is given, not this stream's methods.
    pub fn with_memory<T>(&self, f: impl FnOnce(&mut StreamMemory) -> T) -> T {
        self.device.run(self.index, |st| {
            st.engine.drain_drops();
            f(&mut st.engine)
        })
    }

    /// Process the handles dropped on any thread since this stream's last
    /// call, so its statistics and reports are current.
    pub fn drain(&self) {
        self.device.drain_stream(self.index);
    }

    /// This stream's statistics, current (handles dropped before the call
    /// are counted freed).
    pub fn stats(&self) -> MemoryStats {
        self.device.drain_stream(self.index);
        self.shared().lock().stats_now()
    }

    /// Lower this stream's peaks to their current levels.
    pub fn reset_peak_stats(&self) {
        self.device.reset_stream_peaks(self.index);
    }

    /// The per-pool report of this stream's engine, current as
    /// [`Stream::stats`] is.
    pub fn memory_report(&self) -> MemoryReport {
        self.device.run(self.index, |st| {
            st.engine.drain_drops();
            st.engine.memory_report()
        })
    }
}
