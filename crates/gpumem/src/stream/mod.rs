//! `Stream`: one stream of a device, with its own pools and operation counter.
//!
//! A runtime submits work to a stream in order; gpumem does not launch
//! anything, it only needs to know *how far* each stream got. Each stream
//! counts operations: [`Stream::submit`] adds one (call it per launch-like
//! operation), and [`Stream::complete_through`] / [`Stream::synchronize`]
//! say which have finished. The cross-stream rules built on these counters
//! are in `cross_stream.rs`; reserving (with its out-of-memory retry) is in
//! `reserve.rs`, and the same retry for a lazy page's first touch in
//! `access.rs`.
use std::sync::Arc;
use std::sync::atomic::Ordering;

use mem_pools::{ManagedMemoryHandle, MemoryAllocationMode, MemoryReport};
use mem_storage::{ComputeStorage, StorageHandle, StreamId};

use crate::backend::StreamMemory;
use crate::device::{Device, DeviceShared};
use crate::device_stats::peak_levels;
use crate::error::{GpuMemError, Result};
use crate::stats::MemoryStats;
use crate::stream_state::StreamShared;

/// One stream of a [`Device`]. Cheap to clone; `Send + Sync`.
#[derive(Debug, Clone)]
pub struct Stream {
    pub(crate) device: Arc<DeviceShared>,
    pub(crate) index: usize,
}

impl Stream {
    pub(crate) fn new(device: Arc<DeviceShared>, index: usize) -> Self {
        Self { device, index }
    }

    pub(crate) fn shared(&self) -> &StreamShared {
        &self.device.streams[self.index]
    }

    /// This stream's index on its device (0 is the default stream).
    pub fn index(&self) -> usize {
        self.index
    }

    /// This stream's id in the device's resource.
    pub fn id(&self) -> StreamId {
        self.shared().id
    }

    /// The device this stream belongs to.
    pub fn device(&self) -> Device {
        Device {
            shared: self.device.clone(),
        }
    }

    /// Record one launch-like operation; returns its number (1, 2, ...).
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
    /// [`GpuMemError::CompletionAhead`] for an operation not yet submitted.
    pub fn complete_through(&self, op: u64) -> Result<()> {
        let submitted = self.cursor();
        if op > submitted {
            return Err(GpuMemError::CompletionAhead {
                stream: self.index,
                op,
                submitted,
            });
        }
        self.shared().completed.fetch_max(op, Ordering::AcqRel);
        Ok(())
    }

    /// Wait for all of this stream's work, then mark every operation complete.
    pub fn synchronize(&self) -> Result<()> {
        self.device
            .run(self.index, |st| st.engine.storage().synchronize())?;
        self.shared().mark_all_complete();
        Ok(())
    }

    /// Bytes whose handles were dropped but that this stream still holds:
    /// other streams' recorded work on them has not completed.
    pub fn held_bytes(&self) -> u64 {
        self.shared().lock().held_bytes()
    }

    /// The storage view of `handle`'s memory (page id, offset, size): what a
    /// graph recorder or a copy names. It follows relocation only while the
    /// allocation is not moved; take a fresh one after a relocation.
    ///
    /// # Errors
    /// A stale or foreign handle; with lazy pages, the first touch maps the
    /// memory, and a refusal is retried once after cached memory is given
    /// back, then is [`GpuMemError::OutOfMemory`] (see `access.rs`).
    pub fn view(&self, handle: &ManagedMemoryHandle) -> Result<StorageHandle> {
        let owner = self.device.owner(handle)?;
        self.access(owner, |st| st.engine.get_storage(handle.binding()))
    }

    /// Write `data` at the start of `handle`'s memory (on its own stream).
    ///
    /// # Errors
    /// As [`Stream::view`], and data longer than the allocation.
    pub fn write(&self, handle: &ManagedMemoryHandle, data: &[u8]) -> Result<()> {
        let owner = self.device.owner(handle)?;
        self.access(owner, |st| st.engine.write(handle.binding(), data))
    }

    /// Read the first `out.len()` bytes of `handle`'s memory.
    ///
    /// # Errors
    /// As [`Stream::view`], and a buffer longer than the allocation.
    pub fn read(&self, handle: &ManagedMemoryHandle, out: &mut [u8]) -> Result<()> {
        let owner = self.device.owner(handle)?;
        self.access(owner, |st| st.engine.read(handle.binding(), out))
    }

    /// Open (`Persistent`) or close (`Auto`) a persistent-allocation window.
    pub fn mode(&self, mode: MemoryAllocationMode) {
        self.device.run(self.index, |st| st.engine.mode(mode));
    }

    /// Give back every page this stream holds that nothing uses (frees
    /// processed, held allocations released first). Gives nothing back while
    /// any stream records a graph.
    pub fn cleanup(&self) {
        let device = &self.device;
        device.run(self.index, |st| device.cleanup(st));
    }

    /// Run `f` on this stream's pool engine: everything the CubeCL-compatible `MemoryManagement` offers
    /// (`get_resource`, `release_raw`, `install_pools`, ...), with the
    /// stream's statistics kept current.
    ///
    /// The stream is locked while `f` runs: calling this stream's methods
    /// from inside `f` would wait for itself. Use the engine `f` is given.
    ///
    /// Handles dropped before the call are freed first, so a report `f`
    /// reads (`memory_usage`, `memory_report`) is current.
    pub fn with_memory<T>(&self, f: impl FnOnce(&mut StreamMemory) -> T) -> T {
        self.device.run(self.index, |st| {
            st.engine.drain_drops();
            f(&mut st.engine)
        })
    }

    /// This stream's statistics, current: every handle dropped before the
    /// call, on any thread, is counted freed.
    pub fn stats(&self) -> MemoryStats {
        self.drain();
        self.shared().lock().stats_now()
    }

    /// Lower this stream's peaks to their current levels.
    pub fn reset_peak_stats(&self) {
        let mut st = self.shared().lock();
        // The device's peaks keep what the stream's held (with one stream
        // the device has no peaks of its own until now).
        let peaks = peak_levels(&st.stats_now());
        self.device.peaks.raise(&peaks);
        st.reset_peaks();
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
