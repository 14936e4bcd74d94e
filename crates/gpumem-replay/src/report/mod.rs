//! The replay report: the numbers a user compares allocators by, printed as
//! text or as one JSON object (`--json`).
//!
//! Definitions: live bytes are the sum of requested sizes of allocations
//! alive at a moment; reserved bytes are what the allocator holds from the
//! device. Fragmentation is reserved ÷ live, at the two peaks and at the end
//! (1.0 is perfect; a peak of 2.0 means half the memory held was unusable).

mod driver;
mod text;

pub use driver::{DriverHalves, DriverSummary};

use gpumem::pools::{ChunkStats, PoolReport};
use gpumem::relocate::RelocationSummary;
use serde::Serialize;

use crate::attribution::Attribution;
use crate::trace::PreExisting;

/// Reserved ÷ live ratios.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Fragmentation {
    /// Peak reserved ÷ peak live (`None` when nothing was ever live).
    pub peak: Option<f64>,
    /// Final reserved ÷ final live (`None` when nothing is live at the end).
    #[serde(rename = "final")]
    pub end: Option<f64>,
}

impl Fragmentation {
    /// Ratios from the four byte counts.
    pub fn new(peak_reserved: u64, peak_live: u64, final_reserved: u64, final_live: u64) -> Self {
        let ratio = |r: u64, l: u64| (l > 0).then(|| r as f64 / l as f64);
        Fragmentation {
            peak: ratio(peak_reserved, peak_live),
            end: ratio(final_reserved, final_live),
        }
    }
}

/// Everything a replay measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// Trace file or workload name.
    pub source: String,
    /// Backend name.
    pub backend: String,
    /// Ops replayed (allocations, frees, mode switches, cleanups; unknown frees excluded).
    pub ops: u64,
    /// Successful allocations.
    pub allocs: u64,
    /// Frees performed.
    pub frees: u64,
    /// Peak Σ requested sizes of live allocations.
    pub peak_live_bytes: u64,
    /// Σ requested sizes live at the end.
    pub final_live_bytes: u64,
    /// Live bytes as the backend counts them at the end (should equal `final_live_bytes`).
    pub backend_live_bytes: u64,
    /// Peak bytes held from the device.
    pub peak_reserved_bytes: u64,
    /// Bytes held from the device at the end.
    pub final_reserved_bytes: u64,
    /// Reserved ÷ live ratios.
    pub fragmentation: Fragmentation,
    /// Device allocations (pages) made.
    pub storage_allocs: u64,
    /// Nanoseconds spent in the replay loop alone.
    pub wall_ns: u64,
    /// `wall_ns` ÷ `ops`.
    pub ns_per_op: f64,
    /// Modeled driver time beside the host's, and the waits (gpumem's
    /// rows; absent for backends without a driver).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<DriverSummary>,
    /// Frees of ids that were not live (skipped).
    pub unknown_frees: u64,
    /// Reservations the backend refused.
    pub failed_allocs: u64,
    /// The first refusal: `op N: SIZE bytes: reason` (ops counted from 1).
    pub first_failure: Option<String>,
    /// Per-pool reports (pool backends only; summed over streams), each
    /// serialized as its pool line (mem-pools' `PoolReport`).
    pub pools: Vec<PoolReport>,
    /// What relocation did (`None` when the replay ran without `--relocate`).
    pub relocation: Option<Relocations>,
    /// What arena pools did with virtual memory (absent without arenas).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arenas: Option<ArenaSummary>,
    /// One line per stream memory, when the backend kept more than one.
    pub streams: Vec<StreamLine>,
    /// The device of a multi-device source (a PyTorch snapshot) replayed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<usize>,
    /// Who holds the memory at peak live and at peak reserved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
    /// What the recorded allocator itself reserved (PyTorch snapshots).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recorded: Option<RecordedAllocator>,
    /// Blocks live before the recording began, which the replay allocated
    /// first (PyTorch snapshots).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pre_existing: Option<PreExisting>,
    /// What the reader noticed about the input (the lines the command
    /// prints to stderr as warnings and notes: records skipped and why,
    /// frees of ids never allocated, a snapshot's allocator settings and
    /// other devices); absent when there is nothing to say.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub input_notes: Vec<crate::trace::InputNote>,
}

/// What the arena pools of a replay did with virtual memory. Their
/// `peak_reserved_bytes` is peak *physical* memory (mapped chunks).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ArenaSummary {
    /// The device's chunk counts at the end (mem-pools' `ChunkStats`:
    /// virtual and cached bytes, chunk creates, maps, unmaps, releases,
    /// recreated bytes, sheds skipped), in the object itself.
    #[serde(flatten)]
    pub chunks: ChunkStats,
    /// Driver calls (`ChunkStats::driver_calls`) per 100 trace ops.
    pub driver_calls_per_100_ops: f64,
}

/// What the relocations of a replay did: the sum of the facade's
/// relocation calls (`Stream::relocate_when_wanted` before reservations,
/// `Device::reclaim` at cleanups and at the end). Compactions are moves
/// here, as the facade reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Relocations {
    /// Calls that moved an allocation or gave a page back.
    pub relocations: u64,
    /// Calls that failed (see `last_error`).
    pub failed: u64,
    /// What the calls that succeeded moved and gave back, summed, in the
    /// object itself.
    #[serde(flatten)]
    pub summed: RelocationSummary,
    /// The last failure's message.
    pub last_error: Option<String>,
}

/// One stream's memory at the end of a replay (`--streams per-trace`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StreamLine {
    /// The stream number as the trace names it.
    pub stream: u64,
    /// Successful reservations on it.
    pub allocs: u64,
    /// Peak requested bytes live on it.
    pub peak_live_bytes: u64,
    /// Requested bytes live on it at the end.
    pub final_live_bytes: u64,
    /// Peak bytes its pools held.
    pub peak_reserved_bytes: u64,
    /// Bytes its pools hold at the end.
    pub final_reserved_bytes: u64,
    /// Pages it allocated from the device.
    pub storage_allocs: u64,
}

/// The recorded allocator's reserved bytes, summarized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedAllocator {
    /// Its name (`"PyTorch"`).
    pub name: &'static str,
    /// Its peak reserved bytes over the trace.
    pub peak_reserved_bytes: u64,
    /// The op (from 1, as the report counts) at which it peaked.
    pub peak_op: u64,
    /// Requested bytes live after that op.
    pub live_at_peak_bytes: u64,
    /// Events after which its reserved bytes are below live bytes (0 for
    /// a consistent snapshot; more means its segment history is
    /// incomplete).
    pub below_live_events: u64,
    /// What it reserved after the last event.
    pub final_reserved_bytes: u64,
    /// gpumem's peak reserved ÷ the recorded allocator's (below 1: gpumem
    /// would hold less); `None` when the replay refused allocations.
    pub gpumem_ratio: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragmentation_is_undefined_when_nothing_is_live() {
        let f = Fragmentation::new(10, 0, 10, 0);
        assert_eq!(f.peak, None);
        assert_eq!(f.end, None);
        let f = Fragmentation::new(300, 100, 50, 25);
        assert_eq!(f.peak, Some(3.0));
        assert_eq!(f.end, Some(2.0));
    }
}
