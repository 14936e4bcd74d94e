//! The timed replay loop.
//!
//! Everything that is not the allocator's work happens outside the clock:
//! the trace is parsed and compiled before it starts, slot storage is
//! allocated up front, and the report is assembled after it stops. Inside,
//! the loop only calls the backend and updates a few counters (plus the
//! timeline's bucket maxima and a progress tick every 4 Ki ops when asked).

use std::time::Instant;

use indicatif::ProgressBar;

use super::backend::AllocBackend;
use super::program::{Op, Program};
use super::timeline::{Sample, Timeline};
use crate::error::Result;
use crate::report::{DriverHalves, Fragmentation, ReplayReport};

/// What a replay should collect besides the report.
#[derive(Debug, Default, Clone)]
pub struct ReplayOptions {
    /// Timeline samples to keep (0: no timeline).
    pub timeline_points: usize,
    /// Progress bar to advance (a hidden bar costs nothing).
    pub progress: Option<ProgressBar>,
    /// Read the backend's reserved bytes after every allocation to find
    /// the op at which they peak (for attribution). It costs a statistics
    /// read per allocation, so the command runs it as a second, untimed
    /// pass.
    pub find_peak_reserved_op: bool,
}

/// A finished replay.
#[derive(Debug, Clone)]
pub struct ReplayRun {
    /// The numbers.
    pub report: ReplayReport,
    /// Live and reserved bytes over op index (empty unless asked for).
    pub timeline: Vec<Sample>,
    /// The op (from 0) after which reserved bytes peaked, when asked for.
    pub peak_reserved_op: Option<usize>,
    /// Each pool's reserved bytes at the start of every timeline bucket:
    /// `(op, bytes per pool in the report's pool order)` (empty without a
    /// timeline or pools).
    pub pool_timeline: Vec<(u64, Vec<u64>)>,
}

const PROGRESS_MASK: usize = (1 << 12) - 1;

/// Replays `program` against `backend`.
///
/// `source` names the trace in the report. Failed reservations are counted
/// and the replay goes on (their frees are skipped); a failed free stops it.
pub fn replay<B: AllocBackend>(
    source: &str,
    program: &Program,
    backend: &mut B,
    options: &ReplayOptions,
) -> Result<ReplayRun> {
    let total = program.ops.len() as u64;
    let mut slots: Vec<Option<(B::Token, u64)>> = Vec::with_capacity(program.slots);
    slots.resize_with(program.slots, || None);
    let mut timeline =
        (options.timeline_points > 0).then(|| Timeline::new(total, options.timeline_points));
    let progress = options.progress.as_ref();
    if let Some(bar) = progress {
        bar.set_length(total);
    }

    let (mut live, mut peak_live) = (0u64, 0u64);
    let mut peak_op: Option<(u64, usize)> = None;
    let mut pool_timeline = Vec::new();
    let (mut allocs, mut frees, mut failed) = (0u64, 0u64, 0u64);
    let mut first_failure: Option<String> = None;

    let half = program.ops.len() / 2;
    let mut mid_driver = None;
    let start = Instant::now();
    for (index, op) in program.ops.iter().enumerate() {
        if index == half {
            mid_driver = backend.driver_so_far();
        }
        match *op {
            Op::Alloc { slot, size, stream } => match backend.reserve(size, stream) {
                Ok(token) => {
                    slots[slot as usize] = Some((token, size));
                    allocs += 1;
                    live = live.saturating_add(size);
                    peak_live = peak_live.max(live);
                    if options.find_peak_reserved_op {
                        let reserved = backend.reserved_bytes();
                        if peak_op.is_none_or(|(peak, _)| reserved > peak) {
                            peak_op = Some((reserved, index));
                        }
                    }
                }
                Err(err) => {
                    failed += 1;
                    if first_failure.is_none() {
                        // Ops count from 1, as the report's `ops` does.
                        first_failure = Some(format!("op {}: {size} bytes: {err}", index + 1));
                    }
                }
            },
            Op::Free { slot } => {
                // An empty slot is the free of a failed allocation: nothing to do.
                if let Some((token, size)) = slots[slot as usize].take() {
                    backend.free(token)?;
                    frees += 1;
                    live -= size;
                }
            }
            Op::Mode(mode) => backend.mode(mode),
            Op::Cleanup => backend.cleanup(),
        }
        if let Some(t) = timeline.as_mut() {
            t.record(index as u64, live, backend.reserved_bytes());
            if (index as u64).is_multiple_of(t.stride()) {
                let pools = backend.pool_reserved_now();
                if !pools.is_empty() {
                    pool_timeline.push((index as u64, pools));
                }
            }
        }
        if index & PROGRESS_MASK == 0
            && let Some(bar) = progress
        {
            bar.set_position(index as u64);
        }
    }
    let wall_ns = start.elapsed().as_nanos() as u64;
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }

    backend.settle();
    let final_reserved = backend.reserved_bytes();
    let peak_reserved = backend.peak_reserved_bytes();
    let ns_per_op = if total == 0 {
        0.0
    } else {
        wall_ns as f64 / total as f64
    };
    let report = ReplayReport {
        source: source.to_string(),
        backend: backend.name().to_string(),
        ops: total,
        allocs,
        frees,
        peak_live_bytes: peak_live,
        final_live_bytes: live,
        backend_live_bytes: backend.live_bytes(),
        peak_reserved_bytes: peak_reserved,
        final_reserved_bytes: final_reserved,
        fragmentation: Fragmentation::new(peak_reserved, peak_live, final_reserved, live),
        storage_allocs: backend.storage_allocs(),
        wall_ns,
        ns_per_op,
        driver: backend.driver(total, ns_per_op).map(|mut d| {
            d.halves = mid_driver.map(|mid| DriverHalves::new(mid, &d, total));
            d
        }),
        unknown_frees: program.unknown_frees,
        failed_allocs: failed,
        first_failure,
        pools: backend.pool_lines(),
        relocation: backend.relocation(),
        arenas: backend.arenas(total),
        streams: backend
            .stream_lines()
            .into_iter()
            .map(|mut line| {
                // Backends see dense stream indices; the report names the trace's.
                if let Some(&number) = program.streams.get(line.stream as usize) {
                    line.stream = number;
                }
                line
            })
            .collect(),
        device: None,
        attribution: None,
        recorded: None,
        pre_existing: None,
        input_notes: Vec::new(),
    };
    // Allocations still live at the end are released here, after the report.
    for (token, _) in slots.into_iter().flatten() {
        backend.free(token)?;
    }
    Ok(ReplayRun {
        report,
        timeline: timeline.map(Timeline::finish).unwrap_or_default(),
        peak_reserved_op: peak_op.map(|(_, op)| op),
        pool_timeline,
    })
}
