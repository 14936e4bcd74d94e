//! `MemoryManagement`'s public API for looking in and for the stream's
//! progress: usage, the report, statistics and peaks, and the cursors an
//! arena reclaims by.

use mem_storage::ComputeStorage;

use crate::engine::state::MemoryManagement;
use crate::report::pools::MemoryReport;
use crate::report::stats::PoolStats;
use crate::report::usage::MemoryUsage;

impl<S: ComputeStorage> MemoryManagement<S> {
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
    /// `completed` reaches every stamp on it (`pools/arena/stream_order.rs`).
    /// O(arena pages).
    pub fn set_stream_progress(&mut self, submitted: u64, completed: u64) {
        self.core.set_progress(submitted, completed.min(submitted));
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
    pub fn set_submit_cursor(&mut self, cursor: std::sync::Arc<std::sync::atomic::AtomicU64>) {
        self.submit_cursor = Some(cursor);
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
}
