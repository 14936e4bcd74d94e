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

use mem_budget::GLOBAL_BUDGET_BACKEND;
use mem_pools::{IoError, ManagedMemoryHandle};
use mem_relocate::{RelocatingStreams, RelocationReason};
use mem_storage::{DeviceResource, StorageError};

use crate::device::DeviceShared;
use crate::error::{GpuMemError, Result};
use crate::oom::{OutOfMemoryReport, Refuser};
use crate::relocation::DeviceStreams;
use crate::stream::Stream;

/// Whether giving memory back may make a failed reservation succeed.
fn retryable(err: &IoError) -> bool {
    match err {
        IoError::Storage(e) => e.is_retryable(),
        _ => false,
    }
}

impl DeviceShared {
    /// Give back what every stream caches (PyTorch's free-cached-blocks
    /// step): relocate outdated pages into held room (memory pressure)
    /// unless a graph records, then return every empty page of every stream.
    pub(crate) fn free_cached_memory(&self) {
        let _moving = self.moving();
        // Memory dropped but held for other streams' work: wait for that
        // work (PyTorch synchronizes its outstanding events here) so it can
        // be released below. Nobody waits when nothing is held.
        let held = self.streams.iter().any(|s| s.lock().held_bytes() > 0);
        if held && let Err(err) = self.finish() {
            tracing::warn!(%err, "could not finish every stream's work; held memory stays held");
        }
        let mut streams = DeviceStreams::new(self, 0);
        streams.relocate_device(RelocationReason::MemoryPressure);
        if let Err(err) = streams.finish_result() {
            tracing::warn!(%err, "relocation before the retry failed; cleaning up only");
        }
        for index in 0..self.streams.len() {
            self.run(index, |st| self.cleanup(st));
        }
    }

    fn oom_report(&self, stream: usize, requested: u64, cause: &StorageError) -> OutOfMemoryReport {
        let (mut allocated, mut reserved, mut held, mut pinned) = (0, 0, 0, 0);
        let mut largest = 0;
        for (i, s) in self.streams.iter().enumerate() {
            let st = s.lock();
            allocated += st.stats.allocated_bytes.current;
            reserved += st.stats.reserved_bytes.current;
            held += st.held_bytes();
            let shape = st.engine.relocation_state().shape;
            if shape.outdated_pinned > 0 {
                pinned += shape.outdated_live_bytes;
            }
            if i == stream {
                largest = st.stats_now().largest_free_block;
            }
        }
        let info = self.resource.upstream().mem_info().unwrap_or_default();
        let budget = self.resource.handle();
        let refused_by = match cause {
            StorageError::OutOfMemory { backend, .. } if *backend == GLOBAL_BUDGET_BACKEND => {
                Refuser::DeviceBudget
            }
            _ => Refuser::Device,
        };
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
        if self.device.config.auto_relocate
            && let Err(err) = self.relocate_when_wanted()
        {
            tracing::warn!(%err, stream = self.index, "automatic relocation failed");
        }
        let (mut relocated, mut freed) = (false, false);
        loop {
            match self.try_reserve(size) {
                Ok(handle) => return Ok(handle),
                Err(err @ IoError::PageSizesExhausted { .. }) if !relocated => {
                    // Emptying outdated pages gives the pool its page sizes
                    // back; while a graph records nothing may move, and the
                    // pool's own error says what to do.
                    relocated = true;
                    if let Err(reloc) = self.relocate(RelocationReason::PoolsOutOfPageSizes) {
                        tracing::warn!(%reloc, stream = self.index, "relocation for page sizes refused");
                        return Err(err.into());
                    }
                }
                Err(err) if retryable(&err) && !freed => {
                    tracing::debug!(%err, size, stream = self.index, "reservation refused; freeing cached memory and retrying");
                    freed = true;
                    self.device.retries.fetch_add(1, Ordering::Relaxed);
                    self.shared().lock().stats.num_alloc_retries += 1;
                    self.device.free_cached_memory();
                }
                Err(IoError::Storage(cause @ StorageError::OutOfMemory { .. })) => {
                    self.device.ooms.fetch_add(1, Ordering::Relaxed);
                    self.shared().lock().stats.num_ooms += 1;
                    let report = self.device.oom_report(self.index, size, &cause);
                    tracing::warn!(target: "gpumem", "{report}");
                    return Err(GpuMemError::OutOfMemory(Box::new(report)));
                }
                Err(err) => return Err(err.into()),
            }
        }
    }
}
