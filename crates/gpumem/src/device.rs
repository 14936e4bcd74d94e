//! `Device`: a backend, a budget, and one pool engine per stream.
//!
//! Built with [`DeviceBuilder`]: pick the backend ([`Device::host`],
//! [`Device::simulated`], [`Device::cuda`]), set what differs from the
//! defaults, and [`DeviceBuilder::build`]. What the streams share lives in
//! `DeviceShared`; `run` is the one door to a stream's engine, so every
//! call releases held allocations first and folds its statistics after.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};

use mem_budget::GlobalBudgetHandle;
use mem_pools::{CopyQueue, ManagedMemoryHandle, MemoryDeviceProperties};
use mem_storage::{DeviceResource, MemInfo};

use crate::backend::{Backend, BudgetedResource, DeviceStorage};
use crate::builder::DeviceBuilder;
use crate::config::GpumemConfig;
use crate::device_stats::{
    DevicePeaks, LEVELS, call_peaks, levels, peak_levels, pool_levels, set_peaks, sum_streams,
};
use crate::error::{GpuMemError, Result};
use crate::stats::MemoryStats;
use crate::stream::Stream;
use crate::stream_state::{StreamShared, StreamState};

/// The device's relocation copy queue (host memcpy, or a CUDA copy stream).
pub(crate) struct CopyQueueSlot(pub(crate) Mutex<Box<dyn CopyQueue<DeviceStorage> + Send>>);

impl std::fmt::Debug for CopyQueueSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CopyQueueSlot")
    }
}

/// Everything a device shares between its streams.
#[derive(Debug)]
pub(crate) struct DeviceShared {
    pub(crate) name: String,
    pub(crate) resource: Arc<BudgetedResource>,
    pub(crate) config: GpumemConfig,
    pub(crate) properties: MemoryDeviceProperties,
    pub(crate) streams: Vec<StreamShared>,
    /// The device's peaks (its levels and totals are the streams' sums).
    pub(crate) peaks: DevicePeaks,
    /// Taken by every device-wide move (relocation, reclaim, capture begin)
    /// before any stream lock.
    pub(crate) moving: Mutex<()>,
    /// Held while a capture checks that no stream records and marks its own,
    /// so two captures begun at once cannot both pass the check.
    pub(crate) capture_gate: Mutex<()>,
    pub(crate) retries: AtomicU64,
    pub(crate) ooms: AtomicU64,
    pub(crate) copy_queue: CopyQueueSlot,
    /// The CUDA resource under the budget, on a CUDA device.
    pub(crate) cuda: Option<Arc<mem_storage::CudaResource>>,
    /// The virtual memory arena pools map chunks from (budget-charged);
    /// `None` when the layout uses no arenas.
    pub(crate) virtual_memory: Option<Arc<dyn mem_storage::VirtualMemory>>,
    /// Why `pools: auto` fell back to paged pools (no virtual memory).
    pub(crate) arena_fallback: Option<String>,
}

impl DeviceShared {
    /// Run `f` on stream `index`'s engine: release what may be released
    /// first; after it sample the stream's inactive bytes and, with several
    /// streams, publish its levels and raise the device's peaks (see
    /// [`crate::stats`]). Nothing device-wide is locked: streams run their
    /// calls in parallel. With one stream the engine's counters are all
    /// there is to keep: a call adds a lock, two flag tests and a sample.
    #[inline]
    pub(crate) fn run<T>(&self, index: usize, f: impl FnOnce(&mut StreamState) -> T) -> T {
        if self.streams.len() > 1 {
            return self.run_shared(index, f);
        }
        let mut st = self.streams[index].lock();
        self.settle(&mut st, index);
        let out = f(&mut st);
        self.after(&mut st);
        out
    }

    /// [`Self::run`] on a device with several streams.
    fn run_shared<T>(&self, index: usize, f: impl FnOnce(&mut StreamState) -> T) -> T {
        let mut st = self.streams[index].lock();
        let start = st.begin_shared_call();
        self.settle(&mut st, index);
        let out = f(&mut st);
        self.after(&mut st);
        self.after_shared_call(index, &st, &start);
        out
    }

    /// Before a call: tell the engine how far stream `index`'s work got
    /// (an arena unmaps an idle chunk only once the work that may touch it
    /// is complete), release held allocations (and everything cached, in
    /// `bypass_caching` mode).
    #[inline]
    fn settle(&self, st: &mut StreamState, index: usize) {
        let stream = &self.streams[index];
        st.engine
            .set_stream_progress(stream.submitted(), stream.completed());
        st.settle(&self.streams, self.config.poison);
        if self.config.bypass_caching {
            self.cleanup(st);
        }
    }

    /// After a call: give back everything cached in `bypass_caching` mode,
    /// sample inactive bytes.
    #[inline]
    fn after(&self, st: &mut StreamState) {
        if self.config.bypass_caching {
            self.cleanup(st);
        }
        st.tally.sample_inactive(st.engine.counters());
    }

    /// Publish stream `index`'s levels after a call that began at `start`
    /// and raise the device's peaks with the call's own.
    fn after_shared_call(&self, index: usize, st: &StreamState, start: &[u64; LEVELS]) {
        let call = st.engine.counters();
        let others = (self.streams.iter().enumerate())
            .filter(move |&(j, _)| j != index)
            .map(|(_, s)| &s.levels);
        let (now, peaks) = (pool_levels(call), call_peaks(call));
        let mine = &self.streams[index].levels;
        self.peaks.after_call(others, mine, start, &now, &peaks);
    }

    /// The device's statistics: every stream's summed, the device's peaks
    /// (each at least any one stream's).
    pub(crate) fn device_stats(&self) -> MemoryStats {
        let mut highest = [0; LEVELS];
        let one = |s: &StreamShared| {
            let stats = s.lock().stats_now();
            for (h, p) in highest.iter_mut().zip(peak_levels(&stats)) {
                *h = (*h).max(p);
            }
            stats
        };
        let mut stats = sum_streams(self.streams.iter().map(one));
        let current: [u64; LEVELS] = levels(&stats);
        self.peaks.raise(&highest);
        set_peaks(&mut stats, &self.peaks.read(&current));
        stats
    }

    /// Give back every empty page of one stream — unless a stream records a
    /// graph: a free then could synchronize under the recording (and the
    /// recording stream's own pool refuses anyway).
    pub(crate) fn cleanup(&self, st: &mut StreamState) {
        if self.recording_stream().is_none() {
            st.engine.cleanup(true);
        }
    }

    pub(crate) fn copy_queue(&self) -> MutexGuard<'_, Box<dyn CopyQueue<DeviceStorage> + Send>> {
        // A copy queue's state is its own pending count; the engine's
        // type-state decides what a half-done copy means.
        self.copy_queue.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn moving(&self) -> MutexGuard<'_, ()> {
        self.moving.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The stream whose engine issued `handle`.
    pub(crate) fn owner(&self, handle: &ManagedMemoryHandle) -> Result<usize> {
        let manager = handle.manager_id();
        self.streams
            .iter()
            .position(|s| s.manager == manager)
            .ok_or(GpuMemError::ForeignHandle { manager })
    }

    /// The first stream that is recording a graph.
    pub(crate) fn recording_stream(&self) -> Option<usize> {
        self.streams.iter().position(StreamShared::is_recording)
    }
}

/// A device: its budgeted memory and its streams. Cheap to clone (shared).
#[derive(Debug, Clone)]
pub struct Device {
    pub(crate) shared: Arc<DeviceShared>,
}

impl Device {
    fn builder(backend: Backend) -> DeviceBuilder {
        DeviceBuilder::new(backend)
    }

    /// Real host memory standing in for a device: the embedded default, and
    /// what every test runs on.
    pub fn host() -> DeviceBuilder {
        Self::builder(Backend::Host { capacity: None })
    }

    /// Host memory that refuses to hold more than `capacity` bytes at once,
    /// like a device of that size.
    pub fn host_with_capacity(capacity: u64) -> DeviceBuilder {
        Self::builder(Backend::Host {
            capacity: Some(capacity),
        })
    }

    /// A simulated device of `capacity` bytes: addresses and accounting, no
    /// memory, so workloads larger than this machine can be planned.
    pub fn simulated(capacity: u64) -> DeviceBuilder {
        Self::builder(Backend::Simulated { capacity })
    }

    /// CUDA device `ordinal`.
    ///
    /// # Errors
    /// [`GpuMemError::CudaUnavailable`] when the CUDA driver cannot be loaded
    /// (checked before anything touches it) or the device cannot be opened.
    pub fn cuda(ordinal: usize) -> Result<DeviceBuilder> {
        Backend::cuda(ordinal).map(Self::builder)
    }

    /// A device on a runtime's own CUDA context (bring your own CUDA):
    /// gpumem allocates in it, beside the runtime's kernels and modules.
    /// Give the runtime's streams with [`DeviceBuilder::cuda_streams`].
    ///
    /// # Errors
    /// [`GpuMemError::CudaUnavailable`] when the context's memory cannot be
    /// read.
    pub fn cuda_from_context(ctx: Arc<cudarc::driver::CudaContext>) -> Result<DeviceBuilder> {
        Backend::cuda_context(ctx).map(Self::builder)
    }

    /// `"<backend>:<ordinal>"`, e.g. `"host:0"`.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The configuration the device was built with (after `GPUMEM_CONF`).
    pub fn config(&self) -> &GpumemConfig {
        &self.shared.config
    }

    /// The page limits and alignment every stream's pools use.
    pub fn properties(&self) -> &MemoryDeviceProperties {
        &self.shared.properties
    }

    /// Number of streams.
    pub fn stream_count(&self) -> usize {
        self.shared.streams.len()
    }

    /// Stream `index`.
    pub fn stream(&self, index: usize) -> Result<Stream> {
        if index < self.shared.streams.len() {
            Ok(Stream::new(self.shared.clone(), index))
        } else {
            Err(GpuMemError::unknown_stream(
                index,
                self.shared.streams.len(),
            ))
        }
    }

    /// Stream 0, the default stream.
    pub fn default_stream(&self) -> Stream {
        Stream::new(self.shared.clone(), 0)
    }

    /// Every stream, in index order.
    pub fn streams(&self) -> Vec<Stream> {
        (0..self.shared.streams.len())
            .map(|i| Stream::new(self.shared.clone(), i))
            .collect()
    }

    /// The stream that reserved `handle`.
    pub fn stream_of(&self, handle: &ManagedMemoryHandle) -> Result<Stream> {
        Ok(Stream::new(self.shared.clone(), self.shared.owner(handle)?))
    }

    /// The device budget's ledger: limit, charged bytes, peak, reservations.
    pub fn budget(&self) -> GlobalBudgetHandle {
        self.shared.resource.handle()
    }

    /// Free and total bytes of the device itself (below the budget).
    pub fn mem_info(&self) -> Result<MemInfo> {
        Ok(self.shared.resource.upstream().mem_info()?)
    }

    /// Device-wide statistics (see [`MemoryStats`]), current: every handle
    /// dropped before the call, on any thread, is counted freed.
    pub fn stats(&self) -> MemoryStats {
        self.drain();
        let mut stats = self.shared.device_stats();
        stats.num_alloc_retries = self
            .shared
            .retries
            .load(std::sync::atomic::Ordering::Relaxed);
        stats.num_ooms = self.shared.ooms.load(std::sync::atomic::Ordering::Relaxed);
        stats
    }

    /// Lower every peak of the device, of each stream and of the budget's
    /// ledger to its current level (`reset_peak_memory_stats`).
    pub fn reset_peak_stats(&self) {
        for stream in &self.shared.streams {
            let mut st = stream.lock();
            st.reset_peaks();
            stream.levels.reset_high();
        }
        let current = levels(&self.shared.device_stats());
        self.shared.peaks.reset(&current);
        self.shared.budget_reset_peak();
    }

    /// Wait for every stream's work and mark all of it complete.
    pub fn synchronize(&self) -> Result<()> {
        for stream in self.streams() {
            stream.synchronize()?;
        }
        Ok(())
    }
}

impl DeviceShared {
    fn budget_reset_peak(&self) {
        self.resource.handle().reset_peak();
    }
}
