//! The trace model every reader produces and every workload generates.
//!
//! A trace is a flat sequence of [`Event`]s. Ids name an allocation from its
//! `Alloc` until its `Free`; after that the id may be used again. The model
//! is deliberately smaller than any source format: it keeps exactly what a
//! replay needs (sizes, lifetimes, stream, allocation mode, explicit
//! cleanups) and keeps where allocations came from, times and the recorded
//! allocator's own reserved bytes beside the events ([`Origins`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::origin::Origins;

/// Largest size a trace may request: 64 PiB. Anything above is taken as a
/// corrupt record rather than a request, so sums of live bytes cannot overflow
/// on any plausible trace.
pub const MAX_TRACE_SIZE: u64 = 1 << 56;

/// The message every reader gives for a size above [`MAX_TRACE_SIZE`]
/// (`size` as written in the source, which may not fit in 64 bits).
pub(crate) fn oversized(size: impl std::fmt::Display) -> String {
    format!("size {size} exceeds the 64 PiB limit of a trace; the record is corrupt")
}

/// Allocation mode, as in the pool engine: persistent windows route to the
/// exact-fit persistent pool (weights, optimizer state).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Long-lived allocations: exact fit, never reorganized.
    Persistent,
    /// Ordinary allocations served by the dynamic pools.
    Auto,
}

/// One step of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// Allocate `size` bytes on `stream`, named `id` until freed.
    Alloc {
        /// Name of the allocation while it is live.
        id: u64,
        /// Requested bytes.
        size: u64,
        /// Stream the allocation is made on (0 = default stream).
        stream: u64,
    },
    /// Free the live allocation named `id`.
    Free {
        /// Name given at allocation.
        id: u64,
    },
    /// Switch the allocation mode.
    Mode(Mode),
    /// Ask the allocator to return unused memory (an explicit cleanup).
    Cleanup,
}

/// A free of an id that was not live, as found by a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownFree {
    /// 1-based line or record number in the source.
    pub location: u64,
    /// The id freed.
    pub id: u64,
}

/// What a reader saw besides the events: kept so the command can warn with
/// locations while replay counts the same frees.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// What locations count (`"line"` or `"record"`, from 1); empty for
    /// generated traces.
    pub unit: &'static str,
    /// Lines or records read, including skipped ones.
    pub records: u64,
    /// Frees of ids that were not live (kept in the trace; replay skips them).
    pub unknown_frees: u64,
    /// The first few unknown frees, for the warning message.
    pub first_unknown_frees: Vec<UnknownFree>,
    /// Allocations that already failed in the recorded run (RMM `allocate failure`).
    pub source_failed_allocs: u64,
    /// Records of kinds that carry nothing to replay (e.g. PyTorch `segment_alloc`).
    pub skipped: u64,
    /// Records skipped because the reader does not know their action (PyTorch
    /// actions newer than this reader), by action name: at most
    /// [`UNKNOWN_ACTIONS_KEPT`] names, the rest counted under `"…"`. They
    /// are also counted in `skipped`.
    pub unknown_actions: BTreeMap<String, u64>,
    /// The device a multi-device source (a PyTorch snapshot) was read for.
    pub device: Option<usize>,
    /// Records of known kinds skipped on purpose, by kind (PyTorch
    /// `free_requested`, `segment_alloc`, `oom`, ...; counted in `skipped`
    /// too), for a note saying why.
    pub skipped_kinds: BTreeMap<&'static str, u64>,
    /// Blocks live before the recording began, re-created as the trace's
    /// first allocations (PyTorch snapshots; `None` elsewhere).
    pub pre_existing: Option<PreExisting>,
    /// What the source held besides its events, each saying what it is and
    /// why it is or is not replayed (a PyTorch snapshot's
    /// `allocator_settings`, `external_annotations`, other devices and
    /// several streams); printed as notes.
    pub notes: Vec<String>,
}

/// Memory a snapshot shows allocated that its history never saw allocated
/// (the model loaded before `_record_memory_history`, or allocations that
/// fell out of its ring buffer). They are live from op 0, as PyTorch's
/// `memory_viz` draws them: the trace's first `blocks` events allocate
/// them, active ones first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PreExisting {
    /// Blocks re-created (the first `blocks` events of the trace).
    pub blocks: u64,
    /// Their requested bytes.
    pub bytes: u64,
    /// Of those, blocks still allocated when the snapshot was taken
    /// (`segments[*].blocks`, state `active_allocated`).
    pub active_blocks: u64,
    /// Their bytes.
    pub active_bytes: u64,
    /// Of those, blocks the history frees without having allocated them.
    pub freed_blocks: u64,
    /// Their bytes.
    pub freed_bytes: u64,
    /// Blocks whose allocation stack the snapshot kept (the rest have the
    /// origin `before recording`).
    pub with_frames: u64,
    /// Active blocks left out because the history contradicts them (it
    /// freed their address and never allocated it again).
    pub contradicted: u64,
}

/// How many distinct unknown action names a reader keeps.
pub const UNKNOWN_ACTIONS_KEPT: usize = 8;

/// How many unknown frees a reader remembers by location.
pub const UNKNOWN_FREES_KEPT: usize = 5;

/// A trace read from a file or generated by a workload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    /// The events in order.
    pub events: Vec<Event>,
    /// What the reader noticed.
    pub stats: ReadStats,
    /// Origins, times and the recorded allocator's reserved bytes, where
    /// the source carried them.
    pub origins: Origins,
}

impl Trace {
    /// A trace of generated events (no reader statistics).
    pub fn from_events(events: Vec<Event>) -> Self {
        Trace {
            events,
            stats: ReadStats::default(),
            origins: Origins::default(),
        }
    }
}
