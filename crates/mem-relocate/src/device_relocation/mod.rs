//! `DeviceRelocation`: the nine steps of [`RelocatingStreams`], once, for
//! every runtime.
//!
//! A runtime hands over its streams as [`StreamMemories`]; this type does
//! the rest, the same way for every runtime (the gpumem facade's `Device`,
//! the tests' small runtime):
//!
//! - `bytes_allocated` sums every stream's storage (device pressure is the
//!   whole device's, not one stream's);
//! - `relocation_need` drains the relocating stream's drop queue first (the
//!   pools' reports only see drained frees), then asks its trigger — and,
//!   when nothing is outdated, whether holes add up to a page;
//! - `relocate_memory` moves what outdated pages hold (when there are any),
//!   then for a reason whose room is held (explicit, memory pressure)
//!   compacts sparse current pages into room other pages hold
//!   ([`crate::compact`]); reserved bytes never grow on either step;
//! - `relocate_device_memory` does that on every stream: under memory
//!   pressure every stream compacts, not only those with outdated pages;
//! - a compaction first finishes every stream's work, once per operation
//!   and only when it will plan at all (it moves bytes other streams'
//!   queued work may still read), so a dense device waits on nothing;
//! - each move records on its stream's trigger: one that moved nothing
//!   stalls it on the shape it left, one that moved something clears it;
//! - `cleanup_memory` compacts too unless a stream records, then gives back
//!   every empty page: a reclaim with nothing outdated still empties
//!   sparse pages.
//!
//! One value lives for one operation (a reservation's retry, a reclaim):
//! what it did is its [`RelocationSummary`] and [`RelocationLog`]; the first
//! error stops every later move and is returned by
//! [`DeviceRelocation::finish_result`].

mod steps;

use crate::compact;
use crate::device_relocation::log::RelocationLog;
use crate::device_relocation::memories::StreamMemories;
use crate::error::RelocationError;
use crate::execute;
use crate::reason::RelocationReason;
use crate::streams::RelocatingStreams;

pub(crate) mod log;
pub(crate) mod memories;
pub(crate) mod retry;

/// What a relocation did, summed over the streams it visited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RelocationSummary {
    /// Allocations now living on current pages (moved off outdated pages
    /// or out of sparse current pages by a compaction).
    pub moved_slices: usize,
    /// Their bytes.
    pub moved_bytes: u64,
    /// Pages given back to the device (outdated pages emptied, and on a
    /// reclaim every empty page).
    pub pages_freed: u64,
    /// Their bytes.
    pub bytes_freed: u64,
}

/// A runtime's streams with one relocating stream, for one operation.
pub struct DeviceRelocation<M: StreamMemories> {
    memories: M,
    relocating: usize,
    summary: RelocationSummary,
    log: RelocationLog,
    error: Option<M::Error>,
    /// Every stream's work was finished during this operation: a move after
    /// it needs no second device-wide wait.
    finished: bool,
}

impl<M: StreamMemories> DeviceRelocation<M> {
    /// Steps over `memories` with `relocating` as the relocating stream.
    ///
    /// # Errors
    /// [`RelocationError::UnknownStream`] when `relocating` is not a stream.
    pub fn new(memories: M, relocating: usize) -> Result<Self, RelocationError> {
        let mut steps = Self::at(memories, 0);
        steps.set_relocating(relocating)?;
        Ok(steps)
    }

    /// Steps with a relocating stream the caller has already checked.
    pub(crate) fn at(memories: M, relocating: usize) -> Self {
        Self {
            memories,
            relocating,
            summary: RelocationSummary::default(),
            log: RelocationLog::default(),
            error: None,
            finished: false,
        }
    }

    /// Make `stream` the relocating stream.
    ///
    /// # Errors
    /// [`RelocationError::UnknownStream`]; the relocating stream is unchanged.
    pub fn set_relocating(&mut self, stream: usize) -> Result<(), RelocationError> {
        let streams = self.memories.stream_count();
        if stream >= streams {
            return Err(RelocationError::UnknownStream { stream, streams });
        }
        self.relocating = stream;
        Ok(())
    }

    /// The runtime's streams.
    pub fn memories(&mut self) -> &mut M {
        &mut self.memories
    }

    /// What this operation did so far.
    pub fn summary(&self) -> RelocationSummary {
        self.summary
    }

    /// Every move of this operation, counted.
    pub fn log(&self) -> &RelocationLog {
        &self.log
    }

    /// Every move of this operation, counted, given to the caller.
    pub fn into_log(self) -> RelocationLog {
        self.log
    }

    /// What the steps did, or the first error a step hit.
    ///
    /// # Errors
    /// The first error: a failed finish or move (nothing moved after it).
    pub fn finish_result(self) -> Result<RelocationSummary, M::Error> {
        match self.error {
            Some(err) => Err(err),
            None => Ok(self.summary),
        }
    }

    /// Give back what every stream caches, PyTorch's free-cached-blocks step
    /// before an out-of-memory retry: wait for the work memory is held for
    /// (only when some is; a runtime that first waits for just the streams
    /// holding it, as gpumem's retry does, leaves none), relocate every
    /// stream for memory pressure unless a graph records, then return every
    /// empty page and idle chunk of every stream (an empty arena keeps its
    /// address range: it holds no physical memory, and the retry would
    /// reserve it again).
    /// Cleaning up happens even when a wait or move failed.
    pub fn free_cached(&mut self) {
        if self.memories.held_bytes() > 0 {
            self.finish();
        }
        self.relocate_device(RelocationReason::MemoryPressure);
        for index in 0..self.memories.stream_count() {
            self.count_freed(index, |m| m.release_cached(index));
        }
    }

    /// Give back stream `index`'s empty pages, counting them.
    fn cleanup_stream(&mut self, index: usize) {
        self.count_freed(index, |m| m.cleanup(index));
    }

    /// Run `give_back` on the memories, counting the pages and bytes
    /// stream `index` gave back.
    fn count_freed(&mut self, index: usize, give_back: impl FnOnce(&mut M)) {
        let before = self.memories.with_stream(index, |p| p.memory.stats());
        give_back(&mut self.memories);
        let after = self.memories.with_stream(index, |p| p.memory.stats());
        self.summary.pages_freed += after.storage_frees - before.storage_frees;
        self.summary.bytes_freed += after.reserved_bytes.freed - before.reserved_bytes.freed;
    }

    fn fail(&mut self, err: &RelocationError) {
        self.error.get_or_insert_with(|| err.clone().into());
    }

    /// Move what stream `index`'s outdated pages hold (if any), then compact
    /// it for a held-room reason.
    fn relocate_stream(&mut self, index: usize, reason: RelocationReason) {
        if self.error.is_some() {
            return;
        }
        let result = self.memories.with_stream(index, |p| {
            if !p.memory.has_outdated() {
                return None;
            }
            let before = p.memory.stats();
            let result = execute::relocate_memory(p.memory, reason, p.queue);
            p.trigger
                .record(result.as_ref().ok(), p.memory.relocation_state().shape);
            let after = p.memory.stats();
            Some(result.map(|o| (o, after.storage_frees - before.storage_frees)))
        });
        if let Some(result) = result {
            match &result {
                Ok((o, frees)) => {
                    tracing::debug!(stream = index, %reason, moved = o.moved_slices, pages_freed = o.pages_freed, "relocated");
                    self.add(o.moved_slices, o.moved_bytes, *frees, o.bytes_freed);
                }
                Err(err) => {
                    tracing::warn!(stream = index, %reason, %err, "relocation failed");
                    self.fail(err);
                }
            }
            self.log.record(reason, &result.map(|(o, _)| o));
        }
        self.compact_stream(index, reason);
    }

    /// Compact stream `index` for `reason` (nothing for a reason that may
    /// allocate), finishing every stream's work first when it will plan.
    ///
    /// Whether it will plan is decided in the same hold of the stream as the
    /// compaction itself. Between two holds the runtime's other threads may
    /// free slices (a runtime folds queued drops in at each hold), so a look
    /// that said "not worth it, no finish needed" could be followed by a
    /// compaction that plans and moves memory whose users' work was never
    /// finished. That happened: gpumem's stress test saw a 16-byte slice move
    /// under another stream's unfinished launch (1 run in 5 at 20 s).
    fn compact_stream(&mut self, index: usize, reason: RelocationReason) {
        if self.error.is_some() || reason.may_allocate() {
            return;
        }
        let result = loop {
            let finished = self.finished;
            let attempt = self.memories.with_stream(index, |p| {
                if !finished && compact::compaction_worthwhile(&p.memory.compaction_state()) {
                    return None;
                }
                let before = p.memory.stats();
                let result = compact::compact_memory(p.memory, reason, p.queue);
                p.trigger
                    .record_compaction(result.as_ref().ok(), p.memory.compaction_state());
                let after = p.memory.stats();
                Some(result.map(|run| (run, after.storage_frees - before.storage_frees)))
            });
            match attempt {
                Some(result) => break result,
                // Worth planning and nothing finished yet: finish, then
                // decide again (at most once more: `finished` is set now).
                None => {
                    self.finish();
                    if self.error.is_some() {
                        return;
                    }
                }
            }
        };
        match &result {
            Ok((run, frees)) => {
                if run.rounds > 0 {
                    tracing::debug!(stream = index, %reason, moved = run.outcome.moved_slices, pages_freed = run.outcome.pages_freed, "compacted");
                }
                let o = &run.outcome;
                self.add(o.moved_slices, o.moved_bytes, *frees, o.bytes_freed);
            }
            Err(err) => {
                tracing::warn!(stream = index, %reason, %err, "compaction failed");
                self.fail(err);
            }
        }
        self.log.record_compaction(&result.map(|(run, _)| run));
    }

    fn add(&mut self, slices: usize, bytes: u64, pages: u64, freed: u64) {
        self.summary.moved_slices += slices;
        self.summary.moved_bytes += bytes;
        self.summary.pages_freed += pages;
        self.summary.bytes_freed += freed;
    }
}

impl<M: StreamMemories> std::fmt::Debug for DeviceRelocation<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceRelocation")
            .field("streams", &self.memories.stream_count())
            .field("relocating", &self.relocating)
            .field("summary", &self.summary)
            .field("failed", &self.error.is_some())
            .finish_non_exhaustive()
    }
}
