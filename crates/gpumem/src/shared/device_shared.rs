//! `DeviceShared`: what a device's streams share, and `run`, the one door
//! to a stream's engine: every call releases held allocations first and
//! folds its statistics after.
//!
//! Locking: each stream's engine sits behind its own mutex (see
//! `stream_state.rs`); device-wide work (relocation, reclaim, sleep,
//! capture begin) takes the device's `moving` lock first and then visits
//! the streams one at a time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mem_pools::{CopyQueue, ManagedMemoryHandle, MemoryDeviceProperties};
use mem_storage::ComputeStorage;

use crate::backend::{BudgetedResource, DeviceStorage};
use crate::config::GpumemConfig;
use crate::error::{GpuMemError, Result};
use crate::shared::moving::MovingLock;
use crate::shared::stream_state::{StreamShared, StreamState};
use crate::stats::MemoryStats;
use crate::stats::device_stats::{
    DevicePeaks, LEVELS, call_peaks, levels, peak_levels, pool_levels, set_peaks, sum_streams,
};

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
    pub(crate) moving: MovingLock,
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
    /// The same virtual memory by its CUDA type, on a CUDA device with
    /// arenas: peer access is granted there.
    pub(crate) cuda_vm: Option<Arc<mem_storage::CudaVirtualMemory>>,
    /// The names of the devices granted access to this one's memory.
    pub(crate) peers: Mutex<Vec<String>>,
    /// How many there are: the driver cost adaptor prices each map's
    /// access for each.
    pub(crate) peer_count: Arc<AtomicU64>,
    /// Why `pools: auto` fell back to paged pools (no virtual memory).
    pub(crate) arena_fallback: Option<String>,
    /// The modeled driver time of every call under the budget.
    pub(crate) driver: Arc<mem_storage::DriverMeter>,
    /// The facade's device-wide waits, by source.
    pub(crate) waits: crate::stats::waits::WaitCounters,
    /// Shareable and imported buffers alive, and their bytes.
    pub(crate) sharing: Arc<crate::stats::sharing::SharingTally>,
}

impl DeviceShared {
    /// Run `f` on stream `index`'s engine: release what may be released
    /// first; after it sample the stream's inactive bytes and, with several
    /// streams, publish its levels and raise the device's peaks (see
    /// [`crate::stats`]). Nothing device-wide is locked: streams run their
    /// calls in parallel. With one stream the engine's counters are all
    /// there is to keep: a call adds a lock, two flag tests and a sample.
    ///
    /// Always inlined: each caller passes its own closure, so each copy is
    /// used once, and a reservation (whose engine call inlines the drain of
    /// dropped handles, too big for the inliner's own choice) then pays no
    /// frame and no closure arguments through memory for it.
    #[inline(always)]
    pub(crate) fn run<T>(&self, index: usize, f: impl FnOnce(&mut StreamState) -> T) -> T {
        if self.streams.len() > 1 {
            return self.run_shared(index, f);
        }
        let stream = &self.streams[index];
        let mut st = stream.lock();
        self.settle(&mut st, stream);
        let out = f(&mut st);
        self.after(&mut st);
        out
    }

    /// [`Self::run`] on a device with several streams (kept out of line, so
    /// the one-stream path inlined into every caller stays small).
    #[inline(never)]
    fn run_shared<T>(&self, index: usize, f: impl FnOnce(&mut StreamState) -> T) -> T {
        let stream = &self.streams[index];
        let mut st = stream.lock();
        let start = st.begin_shared_call();
        self.settle(&mut st, stream);
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
    fn settle(&self, st: &mut StreamState, stream: &StreamShared) {
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
        self.give_back(st, false);
    }

    /// [`Self::cleanup`] for the out-of-memory retry: the same physical
    /// memory given back, but an empty arena keeps its address range
    /// (`MemoryManagement::release_cached`).
    pub(crate) fn release_cached(&self, st: &mut StreamState) {
        self.give_back(st, true);
    }

    fn give_back(&self, st: &mut StreamState, keep_ranges: bool) {
        if self.recording_stream().is_none() {
            // Taking the drops other threads queued can end a held
            // allocation's last other holder (a graph's pin counts until
            // its drop is taken), so release the holds that became free
            // before giving memory back: otherwise the next call frees
            // them and their pages wait for the cleanup after it.
            st.engine.drain_drops();
            st.settle(&self.streams, self.config.poison);
            if keep_ranges {
                st.engine.release_cached();
            } else {
                st.engine.cleanup(true);
            }
        }
    }

    pub(crate) fn copy_queue(&self) -> MutexGuard<'_, Box<dyn CopyQueue<DeviceStorage> + Send>> {
        // A copy queue's state is its own pending count; the engine's
        // type-state decides what a half-done copy means.
        self.copy_queue.0.lock().unwrap_or_else(|p| p.into_inner())
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

impl DeviceShared {
    /// Get every stream's queued work done and mark it complete.
    pub(crate) fn finish(&self, source: crate::stats::waits::WaitSource) -> Result<()> {
        self.waits.count(source);
        for stream in &self.streams {
            stream.synchronized(|| stream.lock().engine.storage().synchronize())?;
        }
        Ok(())
    }

    /// Declare operations up to `op` of stream `index` complete (never
    /// backwards); an operation not yet submitted is an error.
    pub(crate) fn complete_through(&self, index: usize, op: u64) -> Result<()> {
        let stream = &self.streams[index];
        let submitted = stream.submitted();
        if op > submitted {
            return Err(GpuMemError::CompletionAhead {
                stream: index,
                op,
                submitted,
            });
        }
        stream.completed.fetch_max(op, Ordering::AcqRel);
        Ok(())
    }

    /// Wait for all of stream `index`'s work, then mark it complete.
    pub(crate) fn synchronize_stream(&self, index: usize) -> Result<()> {
        self.streams[index]
            .synchronized(|| self.run(index, |st| st.engine.storage().synchronize()))?;
        Ok(())
    }

    /// Process the handles dropped on any thread since stream `index`'s
    /// last call (a stream with nothing dropped costs a lock and a load).
    pub(crate) fn drain_stream(&self, index: usize) {
        let pending = self.streams[index].lock().engine.has_pending_drops();
        if pending {
            self.run(index, |st| st.engine.drain_drops());
        }
    }

    /// Lower stream `index`'s peaks to their current levels; the device's
    /// peaks keep what the stream's held.
    pub(crate) fn reset_stream_peaks(&self, index: usize) {
        let mut st = self.streams[index].lock();
        self.peaks.raise(&peak_levels(&st.stats_now()));
        st.reset_peaks();
    }

    pub(crate) fn budget_reset_peak(&self) {
        self.resource.handle().reset_peak();
    }
}
