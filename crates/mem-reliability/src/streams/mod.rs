//! Lazy streams and the reclamation oracle.
//!
//! A real device runs a stream's work after the host submitted it: a
//! stream's *completed* cursor lags its *submitted* one. [`UseLog`] is the
//! harness's simulated device for that: per stream the two cursors (work
//! is submitted by the ops that use memory — a write, a relocation's copy —
//! and completes only when a program op says so, or when the stream is
//! synchronized), and for each use the stream, its cursor and the device
//! addresses it touches.
//!
//! The oracle is the reclamation rule of docs/pools.md: **no physical
//! memory leaves an address while a recorded use of that address is
//! incomplete**. [`CheckedVm`] sits in the arena device's virtual-memory
//! stack and hands every successful `unmap` (and `free_range`) to
//! [`UseLog::check_unmap`], which records a [`Finding`] for each
//! incomplete use the span overlaps. The virtual-memory contract refuses
//! `release_chunk` of a mapped chunk and `free_range` of a range with
//! mappings, and a chunk is mapped again only after an unmap, so an unmap
//! is the one moment a chunk's physical memory can be taken (shed, moved,
//! released, trimmed) from under a use.

mod checked_vm;
#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex, MutexGuard};

pub use checked_vm::CheckedVm;

/// One recorded use of device memory: stream `stream`'s operation
/// `cursor` touches addresses `lo..hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Use {
    /// Stream index.
    pub stream: usize,
    /// The stream's submit cursor of the operation.
    pub cursor: u64,
    /// First address touched.
    pub lo: u64,
    /// One past the last address touched.
    pub hi: u64,
}

/// An unmap that broke the rule: addresses `lo..hi` left while `open`
/// was incomplete (its stream had completed only `completed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    /// First address unmapped.
    pub lo: u64,
    /// One past the last address unmapped.
    pub hi: u64,
    /// The incomplete use it overlapped.
    pub open: Use,
    /// The use's stream's completed cursor at the unmap.
    pub completed: u64,
}

/// One stream's cursors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cursors {
    /// Operations submitted.
    pub submitted: u64,
    /// Operations complete (never above `submitted`).
    pub completed: u64,
}

#[derive(Debug, Default)]
struct State {
    /// Per stream, grown on first mention.
    streams: Vec<Cursors>,
    /// Uses not yet known complete.
    open: Vec<Use>,
    findings: Vec<Finding>,
    /// Unmaps checked.
    unmaps: u64,
    /// Unmaps checked while some recorded use elsewhere was incomplete.
    unmaps_beside_open: u64,
}

impl State {
    fn stream(&mut self, stream: usize) -> &mut Cursors {
        if self.streams.len() <= stream {
            self.streams.resize(stream + 1, Cursors::default());
        }
        &mut self.streams[stream]
    }
}

/// The streams' cursors, their recorded uses and the oracle's findings,
/// shared by the world and its [`CheckedVm`].
#[derive(Debug, Clone, Default)]
pub struct UseLog(Arc<Mutex<State>>);

impl UseLog {
    /// A log with nothing submitted on any stream (streams are numbered
    /// from 0 and known from their first mention).
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The state is plain counters and lists: a panic elsewhere cannot
        // leave it half-changed.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stream `stream`'s cursors.
    pub fn cursors(&self, stream: usize) -> Cursors {
        *self.state().stream(stream)
    }

    /// Submit one operation on `stream`; returns its cursor.
    pub fn submit(&self, stream: usize) -> u64 {
        let mut s = self.state();
        let c = s.stream(stream);
        c.submitted += 1;
        c.submitted
    }

    /// Record that operation `cursor` of `stream` touches `lo..hi`.
    pub fn record(&self, stream: usize, cursor: u64, lo: u64, hi: u64) {
        let mut s = self.state();
        if cursor > s.stream(stream).completed && lo < hi {
            s.open.push(Use {
                stream,
                cursor,
                lo,
                hi,
            });
        }
    }

    /// Complete `ops` more of `stream`'s operations (at most all submitted).
    pub fn complete(&self, stream: usize, ops: u64) {
        let mut s = self.state();
        let c = s.stream(stream);
        c.completed = c.completed.saturating_add(ops).min(c.submitted);
        let done = *c;
        s.open
            .retain(|u| u.stream != stream || u.cursor > done.completed);
    }

    /// Complete everything `stream` submitted (a synchronize).
    pub fn synchronize(&self, stream: usize) {
        self.complete(stream, u64::MAX);
    }

    /// Complete every stream's work.
    pub fn synchronize_all(&self) {
        let n = self.state().streams.len();
        (0..n).for_each(|s| self.synchronize(s));
    }

    /// The oracle: addresses `lo..hi` lost their physical memory now.
    /// Every incomplete use overlapping them is a [`Finding`].
    pub fn check_unmap(&self, lo: u64, hi: u64) {
        let mut s = self.state();
        s.unmaps += 1;
        s.unmaps_beside_open += u64::from(!s.open.is_empty());
        let bad: Vec<Finding> = (s.open.iter())
            .filter(|u| u.lo < hi && lo < u.hi)
            .map(|&open| Finding {
                lo,
                hi,
                open,
                completed: s.streams[open.stream].completed,
            })
            .collect();
        s.findings.extend(bad);
    }

    /// Findings since the last call (taken).
    pub fn take_findings(&self) -> Vec<Finding> {
        std::mem::take(&mut self.state().findings)
    }

    /// (unmaps checked, of which made while some use was incomplete).
    pub fn unmaps(&self) -> (u64, u64) {
        let s = self.state();
        (s.unmaps, s.unmaps_beside_open)
    }

    /// Recorded uses still incomplete.
    pub fn open_uses(&self) -> usize {
        self.state().open.len()
    }
}
