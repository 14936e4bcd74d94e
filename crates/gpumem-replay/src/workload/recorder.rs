//! The event recorder the workload generators write through.
//!
//! It hands out fresh ids, remembers each live allocation's size so a
//! generator can free by id alone, and keeps the live byte count that caps
//! and admission rules need. A generator names what its memory is for with
//! [`Recorder::tag`] ("weights", "kv-cache"): every allocation after it
//! carries that tag into the trace's origins, so `replay` can say who holds
//! memory at the peaks of a built-in workload, and `record` writes the tags.

use std::collections::HashMap;

use crate::trace::{Event, Mode, Origins, Trace};

/// Collects a generated trace.
#[derive(Debug, Default)]
pub(crate) struct Recorder {
    events: Vec<Event>,
    next_id: u64,
    live: HashMap<u64, u64>,
    live_bytes: u64,
    tag: Option<&'static str>,
    origins: Origins,
}

impl Recorder {
    /// An empty recorder.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Allocates `size` bytes on the default stream; returns the new id.
    pub(crate) fn alloc(&mut self, size: u64) -> u64 {
        self.alloc_on(size, 0)
    }

    /// Allocates `size` bytes on `stream`; returns the new id.
    pub(crate) fn alloc_on(&mut self, size: u64, stream: u64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.live.insert(id, size);
        self.live_bytes += size;
        if let Some(tag) = self.tag {
            self.origins.set_origin(self.events.len(), tag);
        }
        self.events.push(Event::Alloc { id, size, stream });
        id
    }

    /// Tag every allocation from now on with `tag` (what the memory is for).
    pub(crate) fn tag(&mut self, tag: &'static str) {
        self.tag = Some(tag);
    }

    /// Frees a live id. Generators only free what they allocated, so an
    /// unknown id is a generator bug; it is recorded anyway (replay counts it).
    pub(crate) fn free(&mut self, id: u64) {
        if let Some(size) = self.live.remove(&id) {
            self.live_bytes -= size;
        }
        self.events.push(Event::Free { id });
    }

    /// Frees every id in `ids`.
    pub(crate) fn free_all(&mut self, ids: impl IntoIterator<Item = u64>) {
        for id in ids {
            self.free(id);
        }
    }

    /// Switches allocation mode.
    pub(crate) fn mode(&mut self, mode: Mode) {
        self.events.push(Event::Mode(mode));
    }

    /// Bytes currently live.
    pub(crate) fn live_bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Events recorded so far.
    pub(crate) fn ops(&self) -> u64 {
        self.events.len() as u64
    }

    /// The recorded trace, tags as its origins.
    pub(crate) fn finish(mut self) -> Trace {
        self.origins.finish(self.events.len());
        Trace {
            events: self.events,
            stats: Default::default(),
            origins: self.origins,
        }
    }
}
