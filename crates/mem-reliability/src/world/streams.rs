//! Lazy streams on a world: the cursors the engines are told, the uses
//! the ops record, and the reclamation oracle's findings as violations
//! (the log and the oracle are in `crate::streams`).
//!
//! A world with lazy streams ([`World::lazy_streams`]) is an arena world
//! whose device runs each stream's work late: a write of an allocation and
//! a relocation's copies are operations submitted on the allocation's
//! stream and recorded as uses of its addresses; they complete only at an
//! [`crate::Op::Complete`] or when the stream is synchronized (a
//! relocation's copy queue waits for its stream, the teardown for every
//! stream). Before every engine call the world reports each stream's
//! cursors to its engine (`set_stream_progress`), as a runtime must.

use crate::error::Violation;
use crate::streams::UseLog;
use crate::world::{Limits, World};

impl World {
    /// A fresh arena world ([`World::arenas`]) whose streams complete their
    /// work lazily (see the module docs).
    pub fn lazy_streams(limits: Limits) -> Self {
        let mut world = Self::arenas(limits);
        world.lazy_streams = true;
        world
    }

    /// Tell the engines that all their streams' work is complete whenever
    /// progress is reported, while the device still runs it: the runtime
    /// bug the reclamation oracle exists to catch (used by the test that
    /// proves the oracle can fail).
    pub fn misreport_progress(&mut self) {
        self.misreport = true;
    }

    /// The log of cursors and uses, on a world with lazy streams.
    pub(crate) fn log(&self) -> Option<&UseLog> {
        self.device.use_log().filter(|_| self.lazy_streams)
    }

    /// Report each stream's cursors to its engine (lazy streams only: a
    /// world without them never reports, so every idle chunk is ready).
    pub(crate) fn report_progress(&mut self) {
        let Some(log) = self.log().cloned() else {
            return;
        };
        for (s, manager) in self.managers.iter_mut().enumerate() {
            let c = log.cursors(s);
            let completed = if self.misreport {
                c.submitted
            } else {
                c.completed
            };
            manager.set_stream_progress(c.submitted, completed);
        }
    }

    /// Submit one operation that uses entry `i`'s memory on its stream and
    /// record the use of its addresses (lazy streams only).
    pub(crate) fn record_use(&mut self, i: usize) {
        let Some(log) = self.log().cloned() else {
            return;
        };
        let (s, size, binding) = {
            let e = &self.model.entries[i];
            (e.stream, e.size, e.binding)
        };
        let cursor = log.submit(s);
        if let Ok(ptr) = self.address_of(s, binding) {
            log.record(s, cursor, ptr, ptr + size.max(1));
        }
    }

    /// A relocation's copies on stream `s`: one operation that uses every
    /// alive allocation of the stream where it is now (any may be a
    /// source), recorded before the engine plans, then reported, so the
    /// commit stamps the sources it frees after the copy.
    pub(crate) fn submit_copies(&mut self, s: usize) {
        let Some(log) = self.log().cloned() else {
            return;
        };
        let cursor = log.submit(s);
        let entries: Vec<_> = (self.model.entries.iter())
            .filter(|e| e.stream == s && e.alive())
            .map(|e| (e.binding, e.size))
            .collect();
        for (binding, size) in entries {
            if let Ok(ptr) = self.address_of(s, binding) {
                log.record(s, cursor, ptr, ptr + size.max(1));
            }
        }
        self.report_progress();
    }

    /// Stream `s` was synchronized (a copy queue waited for it).
    pub(crate) fn synchronized(&mut self, s: usize) {
        if let Some(log) = self.log() {
            log.synchronize(s);
        }
    }

    /// [`crate::Op::Complete`]: the device finishes `ops` more of stream
    /// `s`'s operations.
    pub(crate) fn complete(&mut self, s: usize, ops: u8) {
        if let Some(log) = self.log() {
            log.complete(s, u64::from(ops));
        }
    }

    /// Every stream finishes its work (the teardown's synchronize).
    pub(crate) fn synchronize_all(&mut self) {
        if let Some(log) = self.log() {
            log.synchronize_all();
        }
        self.report_progress();
    }

    /// The oracle's findings since the last call, the first as a violation.
    pub(crate) fn reclamation(&mut self, step: usize) -> Result<(), Violation> {
        let Some(log) = self.device.use_log() else {
            return Ok(());
        };
        let (unmaps, beside) = log.unmaps();
        self.summary.unmaps_checked = unmaps;
        self.summary.unmaps_beside_open = beside;
        match log.take_findings().first() {
            None => Ok(()),
            Some(f) => Err(Violation::UnmappedInUse {
                step,
                lo: f.lo,
                hi: f.hi,
                stream: f.open.stream,
                cursor: f.open.cursor,
                use_lo: f.open.lo,
                use_hi: f.open.hi,
                completed: f.completed,
            }),
        }
    }

    /// Whether stream `s`'s engine holds an idle arena chunk whose work is
    /// not complete (it cannot give that chunk back yet).
    pub(crate) fn chunks_waiting(&self, s: usize) -> bool {
        self.lazy_streams && self.managers[s].arena_chunks_waiting()
    }
}
