//! The liveness-checking collector shared by all readers.
//!
//! Readers parse syntax; this sink enforces the one semantic rule a trace
//! must obey (an id is not allocated twice while live) with the reader's line
//! or record number, and notes unknown frees without failing, because real
//! traces often start mid-run (PyTorch's ring buffer, a late-attached RMM log).

use std::collections::HashMap;
use std::io::BufRead;

use super::event::{
    Event, MAX_TRACE_SIZE, Mode, ReadStats, Trace, UNKNOWN_ACTIONS_KEPT, UNKNOWN_FREES_KEPT,
    UnknownFree, oversized,
};
use super::origin::Origins;
use crate::error::{ReplayError, Result};

/// Builds a [`Trace`] from located events.
#[derive(Debug)]
pub(crate) struct TraceSink {
    format: &'static str,
    unit: &'static str,
    events: Vec<Event>,
    /// Live id → location of its allocation.
    live: HashMap<u64, u64>,
    stats: ReadStats,
    origins: Origins,
}

impl TraceSink {
    /// A sink for `format`, locating errors by `unit` (`"line"` or `"record"`).
    pub(crate) fn new(format: &'static str, unit: &'static str) -> Self {
        TraceSink {
            format,
            unit,
            events: Vec::new(),
            live: HashMap::new(),
            stats: ReadStats {
                unit,
                ..ReadStats::default()
            },
            origins: Origins::default(),
        }
    }

    fn error(&self, location: u64, message: String) -> ReplayError {
        ReplayError::Parse {
            format: self.format,
            unit: self.unit,
            number: location,
            message,
        }
    }

    /// Reads line `line` of a line-based trace into `buf` (cleared first)
    /// and counts it; `false` at the end of the input. A line that is not
    /// UTF-8 is a parse error naming it; any other read failure names
    /// `what` (`"trace"`, `"CSV"`) and the line.
    pub(crate) fn read_line(
        &mut self,
        input: &mut impl BufRead,
        buf: &mut String,
        line: u64,
        what: &str,
    ) -> Result<bool> {
        buf.clear();
        let read = input.read_line(buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::InvalidData {
                ReplayError::line(self.format, line, "line is not valid UTF-8")
            } else {
                ReplayError::Io {
                    what: format!("{what} line {line}"),
                    source: e,
                }
            }
        })?;
        if read == 0 {
            return Ok(false);
        }
        self.count_record();
        Ok(true)
    }

    /// Counts one source line or record (including skipped ones).
    pub(crate) fn count_record(&mut self) {
        self.stats.records += 1;
    }

    /// Counts a record that carries nothing to replay.
    pub(crate) fn skip(&mut self) {
        self.stats.skipped += 1;
    }

    /// Counts a record of a known kind that carries nothing to replay, by
    /// kind (the report says why each kind is skipped).
    pub(crate) fn skip_kind(&mut self, kind: &'static str) {
        self.skip();
        *self.stats.skipped_kinds.entry(kind).or_insert(0) += 1;
    }

    /// Note the blocks live before recording began (already added as
    /// allocations).
    pub(crate) fn pre_existing(&mut self, found: super::event::PreExisting) {
        self.stats.pre_existing = Some(found);
    }

    /// Counts a record skipped because its action is unknown to the reader,
    /// by name (names are shortened to 40 characters; past
    /// [`UNKNOWN_ACTIONS_KEPT`] names, the rest count under `"…"`).
    pub(crate) fn skip_unknown_action(&mut self, action: &str) {
        self.skip();
        let mut name: String = action.chars().take(40).collect();
        if name.len() < action.len() {
            name.push('…');
        }
        let actions = &mut self.stats.unknown_actions;
        if !actions.contains_key(&name) && actions.len() >= UNKNOWN_ACTIONS_KEPT {
            name = "…".to_string();
        }
        *actions.entry(name).or_insert(0) += 1;
    }

    /// Counts an allocation that failed in the recorded run.
    pub(crate) fn source_failed_alloc(&mut self) {
        self.stats.source_failed_allocs += 1;
    }

    /// Adds an allocation; refuses implausible sizes and ids still live.
    pub(crate) fn alloc(&mut self, location: u64, id: u64, size: u64, stream: u64) -> Result<()> {
        if size > MAX_TRACE_SIZE {
            return Err(self.error(location, oversized(size)));
        }
        if let Some(first) = self.live.get(&id) {
            return Err(self.error(
                location,
                format!(
                    "id {id} is allocated again while still live (allocated at {} {first}); \
                     the trace is missing a free",
                    self.unit
                ),
            ));
        }
        self.live.insert(id, location);
        self.events.push(Event::Alloc { id, size, stream });
        Ok(())
    }

    /// Adds a free; a free of an id that is not live is kept and noted.
    pub(crate) fn free(&mut self, location: u64, id: u64) {
        if self.live.remove(&id).is_none() {
            self.stats.unknown_frees += 1;
            if self.stats.first_unknown_frees.len() < UNKNOWN_FREES_KEPT {
                self.stats
                    .first_unknown_frees
                    .push(UnknownFree { location, id });
            }
        }
        self.events.push(Event::Free { id });
    }

    /// Adds a mode switch.
    pub(crate) fn mode(&mut self, mode: Mode) {
        self.events.push(Event::Mode(mode));
    }

    /// Adds an explicit cleanup.
    pub(crate) fn cleanup(&mut self) {
        self.events.push(Event::Cleanup);
    }

    /// Events added so far.
    pub(crate) fn len(&self) -> usize {
        self.events.len()
    }

    /// Name where the last event added came from (a tag or a frame).
    pub(crate) fn origin(&mut self, origin: &str) {
        if let Some(last) = self.events.len().checked_sub(1) {
            self.origins.set_origin(last, origin);
        }
    }

    /// Keep stack `stack` (interned in [`Self::origins_mut`]'s stacks) as
    /// the last event's, naming its origin from it.
    pub(crate) fn stack(&mut self, stack: u32) {
        if let Some(last) = self.events.len().checked_sub(1) {
            self.origins.set_stack(last, stack);
        }
    }

    /// Record when the last event added happened.
    pub(crate) fn time(&mut self, time_us: u64) {
        if let Some(last) = self.events.len().checked_sub(1) {
            self.origins.set_time(last, time_us);
        }
    }

    /// The side tables, for a reader that fills one at the end.
    pub(crate) fn origins_mut(&mut self) -> &mut Origins {
        &mut self.origins
    }

    /// Keep a note about the source (what it held besides its events).
    pub(crate) fn note(&mut self, note: String) {
        self.stats.notes.push(note);
    }

    /// Name the device a multi-device source was read for.
    pub(crate) fn device(&mut self, device: usize) {
        self.stats.device = Some(device);
    }

    /// The trace read so far.
    pub(crate) fn finish(mut self) -> Trace {
        self.origins.finish(self.events.len());
        Trace {
            events: self.events,
            stats: self.stats,
            origins: self.origins,
        }
    }
}
