//! `Stream::reserve`: reserve, and on refusal give memory back and retry once.
//!
//! Like PyTorch's allocator (free cached blocks, retry, then raise): a
//! reservation the device or its budget refuses first gives memory back
//! across the whole device — finishes every stream's work if memory is held
//! for it and releases that memory, relocates outdated pages into room already held (memory
//! pressure, unless a graph records), returns every empty page of every
//! stream — and is tried once more. Only then is it an error, carrying an
//! [`OutOfMemoryReport`]. A pool out of page sizes is relocated for that
//! reason and retried once; anything freeing cannot fix is returned as is.

use std::sync::atomic::Ordering;

use mem_pools::{IoError, ManagedMemoryHandle};
use mem_relocate::{RelocationReason, ReserveRetry, RetryStep};
use mem_storage::{ComputeStorage, DeviceResource, StorageError};

use crate::device::DeviceShared;
use crate::error::{GpuMemError, Result};
use crate::oom::{OutOfMemoryReport, Refuser};
use crate::relocation::DeviceMemories;
use crate::stream::Stream;

impl DeviceShared {
    /// Give back what every stream caches (PyTorch's free-cached-blocks
    /// step), mem-relocate's `free_cached`: wait for the work memory is held
    /// for, relocate outdated pages into held room (memory pressure) unless
    /// a graph records, then return every empty page of every stream.
    pub(crate) fn free_cached_memory(&self) {
        let _moving = self.moving();
        self.finish_for_idle_chunks();
        let result = DeviceMemories::steps(self, 0).and_then(|mut streams| {
            streams.free_cached();
            streams.finish_result()
        });
        if let Err(err) = result {
            tracing::warn!(%err, "waiting or relocating before the retry failed; cleaned up only");
        }
    }

    /// The out-of-memory retry's one wait for arenas: each stream one of
    /// whose idle chunks waits for its work (see mem-pools'
    /// `arena_chunks_waiting`) is synchronized and marked complete, so the
    /// cleanup that follows can give those chunks back. Streams with none
    /// are not waited for.
    fn finish_for_idle_chunks(&self) {
        for stream in &self.streams {
            let mut st = stream.lock();
            if !st.engine.arena_chunks_waiting() {
                continue;
            }
            match st.engine.storage().synchronize() {
                Ok(()) => {
                    drop(st);
                    stream.mark_all_complete();
                }
                Err(err) => tracing::warn!(%err, "waiting for a stream's idle chunks failed"),
            }
        }
    }

    pub(crate) fn oom_report(
        &self,
        stream: usize,
        requested: u64,
        cause: &StorageError,
    ) -> OutOfMemoryReport {
        let (mut allocated, mut reserved, mut held, mut pinned) = (0, 0, 0, 0);
        let (mut largest, mut arena_cached) = (0, None);
        for (i, s) in self.streams.iter().enumerate() {
            let mut st = s.lock();
            let counters = st.engine.counters();
            allocated += counters.allocated_bytes.current;
            reserved += counters.reserved_bytes.current;
            held += st.held_bytes();
            let shape = st.engine.relocation_state().shape;
            if shape.outdated_pinned > 0 {
                pinned += shape.outdated_live_bytes;
            }
            if i == stream {
                let now = st.stats_now();
                largest = now.largest_free_block;
                if now.chunks.virtual_bytes > 0 {
                    arena_cached = Some(now.chunks.cached_bytes);
                }
            }
        }
        let info = self.resource.upstream().mem_info().unwrap_or_default();
        let budget = self.resource.handle();
        if let Some(cached) = arena_cached {
            // An arena's free address range is not memory: a slice there
            // can only map what the device (and the budget) has left, plus
            // the stream's idle cached chunks.
            let budget_room = if budget.is_finite() {
                budget.limit().saturating_sub(budget.charged())
            } else {
                u64::MAX
            };
            largest = largest.min(info.free.min(budget_room).saturating_add(cached));
        }
        let refused_by = cause.refused_by().unwrap_or(Refuser::Device);
        OutOfMemoryReport {
            requested,
            stream,
            device: self.name.clone(),
            device_total: info.total,
            device_free: info.free,
            budget_limit: budget.is_finite().then(|| budget.limit()),
            budget_charged: budget.charged(),
            refused_by,
            allocated,
            reserved,
            reserved_unallocated: reserved.saturating_sub(allocated),
            largest_free_block: largest,
            held_for_streams: held,
            outdated_pinned_bytes: pinned,
            recording: self.recording_stream(),
        }
    }
}

impl Stream {
    fn try_reserve(&self, size: u64) -> Result<ManagedMemoryHandle, IoError> {
        let poison = self.device.config.poison.is_some();
        self.device.run(self.index, |st| {
            let handle = st.engine.reserve(size)?;
            if poison {
                st.hold_fresh(&handle);
            }
            Ok(handle)
        })
    }

    /// Reserve `size` bytes on this stream.
    ///
    /// When the device or its budget refuses, every stream's cached memory
    /// is given back (and outdated pages relocated unless a graph records)
    /// and the reservation is tried once more.
    ///
    /// # Errors
    /// [`GpuMemError::OutOfMemory`] with the report when the retry fails for
    /// lack of memory; the pool engine's error for anything else (a size no
    /// pool accepts, a capture window that would allocate, ...).
    pub fn reserve(&self, size: u64) -> Result<ManagedMemoryHandle> {
        if self.device.config.auto_relocate {
            self.relocate_before_reserve();
        }
        match self.try_reserve(size) {
            Ok(handle) => Ok(handle),
            Err(err) => self.reserve_refused(size, err),
        }
    }

    /// `auto_relocate`: what the trigger asks for, before a reservation.
    #[cold]
    #[inline(never)]
    fn relocate_before_reserve(&self) {
        if let Err(err) = self.relocate_when_wanted() {
            tracing::warn!(%err, stream = self.index, "automatic relocation failed");
        }
    }

    /// The refused reservation's retry (kept out of the common path, which
    /// it would otherwise fill with its stack and registers).
    #[cold]
    #[inline(never)]
    fn reserve_refused(&self, size: u64, first: IoError) -> Result<ManagedMemoryHandle> {
        let mut retry = ReserveRetry::new();
        let mut refused = Some(first);
        loop {
            let err = match refused.take().map_or_else(|| self.try_reserve(size), Err) {
                Ok(handle) => return Ok(handle),
                Err(err) => err,
            };
            match (retry.next(&err), err) {
                (RetryStep::RelocateForPageSizes, err) => {
                    // Emptying outdated pages gives the pool its page sizes
                    // back; while a graph records nothing may move, and the
                    // pool's own error says what to do.
                    if let Err(reloc) = self.relocate(RelocationReason::PoolsOutOfPageSizes) {
                        tracing::warn!(%reloc, stream = self.index, "relocation for page sizes refused");
                        return Err(err.into());
                    }
                }
                (RetryStep::FreeCachedMemory, err) => {
                    tracing::debug!(%err, size, stream = self.index, "reservation refused; freeing cached memory and retrying");
                    self.device.retries.fetch_add(1, Ordering::Relaxed);
                    self.shared().lock().tally.num_alloc_retries += 1;
                    self.device.free_cached_memory();
                }
                (RetryStep::GiveUp, IoError::Storage(cause @ StorageError::OutOfMemory { .. })) => {
                    self.device.ooms.fetch_add(1, Ordering::Relaxed);
                    self.shared().lock().tally.num_ooms += 1;
                    let report = self.device.oom_report(self.index, size, &cause);
                    tracing::warn!(target: "gpumem", "{report}");
                    return Err(GpuMemError::OutOfMemory(Box::new(report)));
                }
                (RetryStep::GiveUp, err) => return Err(err.into()),
            }
        }
    }
}
