//! [`Stream`]'s whole public API, in this one file, each method with a
//! runnable example: identity, ordering, reservation and mode first, then
//! by idea: memory more than one stream uses ([`Stream::bind`], the cursor
//! rule, [`Stream::record_use`]), a buffer's bytes ([`Stream::view`],
//! [`Stream::read`], [`Stream::write`], [`Stream::device_ptr`]), what moves
//! or pins memory ([`Stream::relocate`], [`Stream::reclaim`],
//! [`Stream::begin_capture`]) and looking in ([`Stream::stats`],
//! [`Stream::memory_report`]).
//!
//! The methods are short wrappers; the machinery is private, beside this
//! file: `reserve.rs`, `out_of_memory.rs` (the one out-of-memory retry and
//! its report), `cross_stream.rs` (the cursor rule, [`Stream::bind`],
//! [`Stream::record_use`]),
//! `guards.rs` ([`DevicePtrGuard`], [`PersistentWindow`]) and `launch.rs`
//! ([`LaunchGuard`]). Moves are in the crate's `relocation/`, capture in
//! [`crate::capture`]. The file is over 300 lines only in rustdoc, which
//! `cargo xtask layout` does not count (the examples belong with the API).

mod cross_stream;
mod guards;
mod launch;
mod out_of_memory;
mod peer_copy;
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
use crate::shared::{DeviceShared, StreamShared};
use crate::stats::MemoryStats;

pub use crate::shared::Stream;
pub use cross_stream::StreamWait;
pub use guards::{DevicePtrGuard, PersistentWindow};
pub use launch::LaunchGuard;

impl Stream {
    /// This stream's index on its device (0 is the default stream).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(device.stream(1)?.index(), 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn index(&self) -> usize {
        self.index
    }

    /// This stream's id in the device's resource.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(stream.id(), device.default_stream().id());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn id(&self) -> StreamId {
        self.shared().id
    }

    /// The device this stream belongs to.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(stream.device().name(), device.name());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn device(&self) -> crate::Device {
        crate::Device::new(self.device.clone())
    }

    /// Begin a launch that uses `buffers` (those of other streams get a
    /// [`Stream::record_use`]): until it is submitted or dropped no memory
    /// moves, so what [`LaunchGuard::view`] reads is what the work uses.
    ///
    /// # Errors
    /// A stale or foreign handle; [`GpuMemError::LaunchOpen`](crate::GpuMemError::LaunchOpen) when this thread
    /// already holds a launch of the device.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let a = stream.reserve(256)?;
    /// let launch = stream.launch(&[&a])?; // nothing moves until submit
    /// let _view = launch.view(&a)?; // what the kernel uses
    /// assert_eq!(launch.submit(), 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn launch(&self, buffers: &[&ManagedMemoryHandle]) -> Result<LaunchGuard<'_>> {
        launch::launch(self, buffers)
    }

    /// Count one launch-like operation; returns its number (1, 2, ...).
    /// Prefer [`Stream::launch`], which also keeps memory from moving.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!((stream.submit(), stream.submit()), (1, 2));
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn submit(&self) -> u64 {
        self.shared().submitted.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// Operations submitted so far (the stream's operation counter).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// stream.submit();
    /// assert_eq!(stream.cursor(), 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn cursor(&self) -> u64 {
        self.shared().submitted()
    }

    /// Operations known to be complete.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let op = stream.submit();
    /// stream.complete_through(op)?;
    /// assert_eq!(stream.completed(), op);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn completed(&self) -> u64 {
        self.shared().completed()
    }

    /// Declare that operations up to `op` have completed (a runtime calls
    /// this when its event for `op` fires). Never moves backwards.
    ///
    /// # Errors
    /// [`crate::GpuMemError::CompletionAhead`] for an operation not yet submitted.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let op = stream.submit();
    /// stream.complete_through(op)?;
    /// assert!(stream.complete_through(op + 1).is_err());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn complete_through(&self, op: u64) -> Result<()> {
        self.device.complete_through(self.index, op)
    }

    /// Wait for all of this stream's work, then mark every operation complete.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// stream.submit();
    /// stream.synchronize()?;
    /// assert_eq!(stream.completed(), 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
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
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(4096)?;
    /// assert_eq!(buffer.size(), 4096);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    // Inlined into the caller's crate too (with `reserve::reserve`): a
    // reservation is then one frame above the engine's, its result handed
    // over in place rather than copied through two more.
    #[inline]
    pub fn reserve(&self, size: u64) -> Result<ManagedMemoryHandle> {
        reserve::reserve(self, size)
    }

    /// Open ([`MemoryAllocationMode::Persistent`]) or close
    /// ([`MemoryAllocationMode::Auto`]) a persistent-allocation window.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// stream.mode(MemoryAllocationMode::Persistent);
    /// let weights = stream.reserve(MIB)?;
    /// stream.mode(MemoryAllocationMode::Auto);
    /// assert!(stream.stats().allocated_bytes.current >= weights.size());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn mode(&self, mode: MemoryAllocationMode) {
        self.device.run(self.index, |st| st.engine.mode(mode));
    }

    /// Persistent mode on this stream until the guard drops (weights, graph
    /// memory: exact-fit pages never relocated). Windows nest.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let _weights = {
    ///     let _window = stream.persistent();
    ///     stream.reserve(MIB)?
    /// };
    /// assert!(stream.stats().allocated_bytes.current >= MIB);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn persistent(&self) -> PersistentWindow {
        PersistentWindow::open(self.device.clone(), vec![self.index])
    }

    /// Give back every page this stream holds that nothing uses. Gives
    /// nothing back while any stream records a graph.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// drop(stream.reserve(MIB)?);
    /// stream.cleanup();
    /// assert_eq!(stream.stats().allocated_bytes.current, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn cleanup(&self) {
        let device = &self.device;
        device.run(self.index, |st| device.cleanup(st));
    }

    /// Copy all of `src` (a buffer of this stream's device) into the start
    /// of `dst` (a buffer of `dst_stream`'s device, another device or this
    /// one), ordered on both streams: after the work queued on
    /// `dst_stream`, and before the work queued there later. Each stream
    /// counts it as one operation. On CUDA it is `cuMemcpyPeerAsync` and
    /// returns once queued; off CUDA the bytes go through host memory.
    ///
    /// # Errors
    /// [`crate::GpuMemError::Peer`] when `dst` is smaller than `src` or one
    /// device is CUDA and the other not; [`crate::GpuMemError::ForeignHandle`]
    /// for a buffer of neither device; a driver error from the copy.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let (a, b) = (Device::host().ignore_env().build()?, Device::host().ignore_env().build()?);
    /// let (sa, sb) = (a.default_stream(), b.default_stream());
    /// let (src, dst) = (sa.reserve(4)?, sb.reserve(4)?);
    /// sa.write(&src, &[1, 2, 3, 4])?;
    /// sa.copy_to_peer(&src, &sb, &dst)?;
    /// let mut back = [0; 4];
    /// sb.read(&dst, &mut back)?;
    /// assert_eq!(back, [1, 2, 3, 4]);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn copy_to_peer(
        &self,
        src: &ManagedMemoryHandle,
        dst_stream: &Stream,
        dst: &ManagedMemoryHandle,
    ) -> Result<()> {
        peer_copy::copy(self, src, dst_stream, dst)
    }

    /// The CUDA stream this stream's memory is ordered on; `None` off CUDA.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert!(stream.cuda_stream().is_none()); // a host device
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn cuda_stream(&self) -> Option<Arc<cudarc::driver::CudaStream>> {
        let cuda = self.device.cuda.as_ref()?;
        cuda.cuda_stream(self.id()).ok()
    }
}

// Memory more than one stream uses: `bind`, the cursor rule, `record_use`.
impl Stream {
    pub(crate) fn new(device: Arc<DeviceShared>, index: usize) -> Self {
        Self { device, index }
    }

    /// This stream's shared state on its device.
    pub(crate) fn shared(&self) -> &StreamShared {
        &self.device.streams[self.index]
    }

    /// Hand `reserved`'s memory to `assigned` and stamp it with the number
    /// of the next operation this stream submits (bind, then launch); returns
    /// the stamp. Memory another stream's work uses ([`Stream::record_use`])
    /// is never freed by a bind: it stays held ([`Stream::held_bytes`]) until
    /// that work completes. A refused bind changes nothing in the engine.
    ///
    /// # Errors
    /// A stale handle or one of another stream; [`IoError::SharedReserved`](mem_pools::IoError::SharedReserved)
    /// when `reserved` has another holder (a clone, a graph's pin);
    /// [`IoError::AssignedPinned`](mem_pools::IoError::AssignedPinned) when a captured graph pins `assigned`.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let (tensor, fresh) = (stream.reserve(1024)?, stream.reserve(1024)?);
    /// let stamp = stream.bind(fresh, tensor.clone())?;
    /// assert_eq!(stream.get_cursor(&tensor)?, stamp);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn bind(
        &self,
        reserved: ManagedMemoryHandle,
        assigned: ManagedMemoryHandle,
    ) -> Result<u64> {
        cross_stream::bind(self, reserved, assigned)
    }

    /// Stamp `handle` for the next operation without moving memory
    /// ([`Stream::bind`] of a handle to itself).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(64)?;
    /// assert_eq!(stream.stamp(&buffer)?, 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn stamp(&self, handle: &ManagedMemoryHandle) -> Result<u64> {
        self.bind(handle.clone(), handle.clone())
    }

    /// The stamp of `handle`'s last [`Stream::bind`] (0 if never bound), read on the
    /// stream that reserved it.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(64)?;
    /// assert_eq!(stream.get_cursor(&buffer)?, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn get_cursor(&self, handle: &ManagedMemoryHandle) -> Result<u64> {
        cross_stream::get_cursor(self, handle)
    }

    /// Whether this stream must wait before using `handle`: `Some` when the
    /// operation it was last bound for, on the stream that owns it, was
    /// submitted and is not known complete; `None` on its own stream.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let (buffer, other) = (stream.reserve(64)?, device.stream(1)?);
    /// stream.stamp(&buffer)?;
    /// stream.submit();
    /// assert!(other.must_wait(&buffer)?.is_some());
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn must_wait(&self, handle: &ManagedMemoryHandle) -> Result<Option<StreamWait>> {
        cross_stream::must_wait(self, handle)
    }

    /// Order this stream's later work after `wait`'s stream's work (CUDA: an
    /// event recorded there, waited here; nothing to order on in-order
    /// backends).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let (buffer, other) = (stream.reserve(64)?, device.stream(1)?);
    /// stream.stamp(&buffer)?;
    /// stream.submit();
    /// let wait = other.must_wait(&buffer)?.expect("stream 0's op 1 is pending");
    /// assert_eq!((wait.stream, wait.op), (0, 1));
    /// other.wait_for(wait)?; // other's later work runs after op 1
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn wait_for(&self, wait: StreamWait) -> Result<()> {
        cross_stream::wait_for(self, wait)
    }

    /// Record that work on this stream uses `handle` (reserved on another
    /// stream), like PyTorch's `record_stream`: its memory is not reused
    /// until this stream completes the work submitted when the handle's last
    /// holder drops. No-op on its own stream.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let (buffer, other) = (stream.reserve(4096)?, device.stream(1)?);
    /// other.record_use(&buffer)?;
    /// let op = other.submit();
    /// drop(buffer);
    /// assert_eq!(stream.held_bytes(), 4096); // until `op` completes
    /// other.complete_through(op)?;
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn record_use(&self, handle: &ManagedMemoryHandle) -> Result<()> {
        cross_stream::record_use(self, handle)
    }

    /// Bytes whose handles were dropped but that this stream still holds
    /// for other streams' unfinished work.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(stream.held_bytes(), 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn held_bytes(&self) -> u64 {
        self.shared().lock().held_bytes()
    }
}

// A buffer's bytes: its storage view, host reads and writes, a pinned pointer.
impl Stream {
    /// The storage view of `handle`'s memory (page id, offset, size); take a
    /// fresh one after a relocation.
    ///
    /// # Errors
    /// A stale or foreign handle; a lazy page's first touch refused twice
    /// (once more after cached memory is given back) is
    /// [`crate::GpuMemError::OutOfMemory`].
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(64)?;
    /// assert_eq!(stream.view(&buffer)?.size(), 64);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn view(&self, handle: &ManagedMemoryHandle) -> Result<StorageHandle> {
        out_of_memory::on_owner(self, handle, |st, binding| st.engine.get_storage(binding))
    }

    /// Write `data` at the start of `handle`'s memory (on its own stream).
    ///
    /// # Errors
    /// As [`Stream::view`], and data longer than the allocation.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(64)?;
    /// stream.write(&buffer, &[1, 2, 3])?;
    /// let mut out = [0; 3];
    /// stream.read(&buffer, &mut out)?;
    /// assert_eq!(out, [1, 2, 3]);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn write(&self, handle: &ManagedMemoryHandle, data: &[u8]) -> Result<()> {
        out_of_memory::on_owner(self, handle, |st, binding| st.engine.write(binding, data))
    }

    /// Read the first `out.len()` bytes of `handle`'s memory.
    ///
    /// # Errors
    /// As [`Stream::view`], and a buffer longer than the allocation.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(64)?;
    /// stream.write(&buffer, &[1, 2, 3])?;
    /// let mut out = [0; 3];
    /// stream.read(&buffer, &mut out)?;
    /// assert_eq!(out, [1, 2, 3]);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn read(&self, handle: &ManagedMemoryHandle, out: &mut [u8]) -> Result<()> {
        out_of_memory::on_owner(self, handle, |st, binding| st.engine.read(binding, out))
    }

    /// A buffer of `bytes` another process can map: on physical chunks of
    /// its own (no other slice ever lies on them), zero when made, charged
    /// to the device's budget; relocation, compaction, reclaim, shedding
    /// and sleep never touch it. Describe it with [`Stream::export`].
    /// Needs [`GpumemConfig::share`](crate::config::GpumemConfig::share)
    /// (`GPUMEM_CONF=share:posix_fd`) and a device whose pools use virtual
    /// memory (docs/sharing.md).
    ///
    /// # Errors
    /// [`crate::GpuMemError::SharingUnavailable`] when not configured;
    /// [`crate::GpuMemError::NotExportable`] for zero bytes; a storage or
    /// budget refusal (nothing stays mapped or charged).
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let mut config = GpumemConfig::default();
    /// config.share = Some(gpumem::storage::ShareHandles::POSIX_FD);
    /// let device = Device::host().config(config).ignore_env().build()?;
    /// let buffer = device.default_stream().reserve_shareable(3 * MIB)?;
    /// buffer.write(0, &[1, 2, 3])?;
    /// assert_eq!((buffer.len(), buffer.mapped_len()), (3 * MIB, 4 * MIB));
    /// # Ok::<(), GpuMemError>(())
    /// ```
    #[cfg(unix)]
    pub fn reserve_shareable(&self, bytes: u64) -> Result<crate::sharing::ShareableBuffer> {
        crate::sharing::reserve(&self.device, bytes)
    }

    /// Describe `buffer` for another process: per chunk a new POSIX file
    /// descriptor, its offset and the bytes used. Send it with
    /// [`crate::sharing::send_shared`] and map it there with
    /// [`Device::import`](crate::Device::import).
    ///
    /// # Errors
    /// [`crate::GpuMemError::NotExportable`] for a pooled slice (a
    /// [`ManagedMemoryHandle`]: its chunks hold other slices' bytes) or a
    /// buffer of another device; a driver refusal.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let mut config = GpumemConfig::default();
    /// config.share = Some(gpumem::storage::ShareHandles::POSIX_FD);
    /// let device = Device::host().config(config).ignore_env().build()?;
    /// let stream = device.default_stream();
    /// let buffer = stream.reserve_shareable(MIB)?;
    /// let shared = stream.export(&buffer)?;
    /// assert_eq!((shared.len, shared.chunks.len()), (MIB, 1));
    /// let pooled = stream.reserve(MIB)?;
    /// assert!(matches!(stream.export(&pooled), Err(GpuMemError::NotExportable { .. })));
    /// # Ok::<(), GpuMemError>(())
    /// ```
    #[cfg(unix)]
    pub fn export(
        &self,
        buffer: &impl crate::sharing::Exportable,
    ) -> Result<crate::sharing::SharedBuffer> {
        crate::sharing::export(&self.device, buffer)
    }

    /// The device address of `handle`'s memory, pinned (never moved) while
    /// the guard lives. While the device sleeps the address is the one it
    /// will have after [`Device::wake`](crate::Device::wake).
    ///
    /// # Errors
    /// As [`Stream::view`]; nothing is pinned on error.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let buffer = stream.reserve(64)?;
    /// let ptr = stream.device_ptr(&buffer)?; // pinned until dropped
    /// assert_eq!(ptr.len(), 64);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn device_ptr(&self, handle: &ManagedMemoryHandle) -> Result<DevicePtrGuard> {
        guards::device_ptr(self, handle)
    }
}

// What moves or pins memory: relocation, reclaim, graph capture.
impl Stream {
    /// Move what this stream holds on outdated pages (every stream's work is
    /// finished first; refused while any stream records).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let summary = stream.relocate(RelocationReason::Explicit)?;
    /// assert_eq!(summary.moved_slices, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn relocate(&self, reason: RelocationReason) -> Result<RelocationSummary> {
        relocation::relocate_stream(&self.device, self.index, reason)
    }

    /// Relocate this stream's memory if its trigger asks for it: the device
    /// has less than a page to spare, or its pools are about to run out of
    /// page sizes (never again on a shape a relocation could not change).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let summary = stream.relocate_when_wanted()?; // nothing is outdated
    /// assert_eq!(summary.moved_slices, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn relocate_when_wanted(&self) -> Result<RelocationSummary> {
        relocation::relocate_when_wanted(&self.device, self.index)
    }

    /// Relocate this stream's outdated pages into held room, then give back
    /// every page it holds empty.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// drop(stream.reserve(MIB)?);
    /// stream.reclaim()?;
    /// assert_eq!(stream.stats().reserved_bytes.current, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn reclaim(&self) -> Result<RelocationSummary> {
        relocation::reclaim_stream(&self.device, self.index)
    }

    /// Begin a capture on this stream with the host graph backend.
    ///
    /// # Errors
    /// As [`Stream::begin_capture_with`].
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let warmup = stream.begin_capture()?;
    /// let w = warmup.stream(); // the warmup pass reserves what recording will
    /// drop((w.reserve(KIB)?, w.reserve(KIB)?));
    /// let mut recording = warmup.start_recording()?;
    /// let (a, b) = (recording.stream().reserve(KIB)?, recording.stream().reserve(KIB)?);
    /// let (src, dst) = (stream.view(&a)?, stream.view(&b)?);
    /// recording.recorder().copy(0, src, dst)?; // the pass's "kernel"
    /// let mut graph = recording.end()?;
    /// stream.write(&a, &[7; 4])?;
    /// graph.replay()?; // the copy runs again
    /// let mut out = [0; 4];
    /// stream.read(&b, &mut out)?;
    /// assert_eq!(out, [7; 4]);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn begin_capture(&self) -> Result<CaptureWarmup<HostGraphBackend>> {
        self.begin_capture_with(HostGraphBackend::new())
    }

    /// Begin a capture with `backend`: every stream's outdated memory is
    /// relocated; the stream's pool opens its window and the stream is
    /// marked recording. Beside another stream's recording it begins only
    /// when nothing is outdated (always on arenas), and skips the
    /// relocation, which would have nothing to move.
    ///
    /// # Errors
    /// `CaptureError::Streams(RelocationError::Recording { .. })` while
    /// another stream records and some stream's paged memory is outdated,
    /// before anything changes.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let backend = gpumem::capture::HostGraphBackend::new();
    /// let warmup = stream.begin_capture_with(backend)?;
    /// assert_eq!(warmup.stream().index(), 0);
    /// warmup.abort();
    /// assert!(stream.reserve(KIB).is_ok()); // the stream is usable again
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn begin_capture_with<B: GraphBackend>(&self, backend: B) -> Result<CaptureWarmup<B>> {
        CaptureWarmup::begin(self.capture_streams(), backend)
    }

    /// This stream as mem-capture's [`CaptureStreams`](mem_capture::CaptureStreams),
    /// for driving [`mem_capture::Capture`] directly.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// assert_eq!(stream.capture_streams().stream().index(), 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn capture_streams(&self) -> StreamCapture {
        StreamCapture::new(self.clone())
    }
}

// Looking in: the engine itself, its statistics, its report.
impl Stream {
    /// Run `f` on this stream's pool engine (everything the
    /// CubeCL-compatible [`MemoryManagement`](mem_pools::MemoryManagement) offers), the stream locked while
    /// it runs: use the engine `f` is given, not this stream's methods.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let _buffer = stream.reserve(4096)?;
    /// let usage = stream.with_memory(|mm| mm.memory_usage());
    /// assert_eq!(usage.number_allocs, 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn with_memory<T>(&self, f: impl FnOnce(&mut StreamMemory) -> T) -> T {
        self.device.run(self.index, |st| {
            st.engine.drain_drops();
            f(&mut st.engine)
        })
    }

    /// Process the handles dropped on any thread since this stream's last
    /// call, so its statistics and reports are current.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// drop(stream.reserve(64)?);
    /// stream.drain();
    /// assert_eq!(stream.stats().allocated_bytes.current, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn drain(&self) {
        self.device.drain_stream(self.index);
    }

    /// This stream's statistics, current (handles dropped before the call
    /// are counted freed).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let _buffer = stream.reserve(4096)?;
    /// assert!(stream.stats().allocated_bytes.current >= 4096);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn stats(&self) -> MemoryStats {
        self.device.drain_stream(self.index);
        self.shared().lock().stats_now()
    }

    /// Lower this stream's peaks to their current levels (current as
    /// [`Stream::stats`] is: handles dropped before the call are freed).
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// drop(stream.reserve(MIB)?);
    /// stream.reset_peak_stats();
    /// assert_eq!(stream.stats().allocated_bytes.peak, 0);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn reset_peak_stats(&self) {
        self.device.drain_stream(self.index);
        self.device.reset_stream_peaks(self.index);
    }

    /// The per-pool report of this stream's engine, current as
    /// [`Stream::stats`] is.
    ///
    /// ```
    /// # use gpumem::prelude::*; let device = Device::host().streams(2).ignore_env().build()?;
    /// # let stream = device.default_stream();
    /// let _buffer = stream.reserve(4096)?;
    /// assert_eq!(stream.memory_report().usage.number_allocs, 1);
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn memory_report(&self) -> MemoryReport {
        self.device.run(self.index, |st| {
            st.engine.drain_drops();
            st.engine.memory_report()
        })
    }
}
