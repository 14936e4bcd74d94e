//! The recorded allocator beside gpumem: what PyTorch itself reserved.
//!
//! A PyTorch snapshot records its caching allocator's segments (see
//! `trace/pytorch.rs`), so a replay can say "PyTorch reserved X at its
//! peak, gpumem would reserve Y" for the very program that ran — the
//! comparison a PyTorch user switching allocators asks for first — and the
//! plots can draw PyTorch's line beside gpumem's.
//!
//! Like is compared with like: the trace holds the blocks allocated before
//! recording began (see `trace/pytorch_blocks.rs`), so gpumem reserves for
//! the same allocations PyTorch's segments held, and a replay that refused
//! allocations is not compared at all (it would reserve less than live).

use std::collections::HashMap;

use crate::replay::Program;
use crate::report::RecordedAllocator;
use crate::trace::{Event, Trace};

/// Requested bytes live after each event of `trace`.
fn live_after_events(trace: &Trace) -> Vec<u64> {
    let mut sizes: HashMap<u64, u64> = HashMap::new();
    let mut live = 0u64;
    trace
        .events
        .iter()
        .map(|event| {
            match *event {
                Event::Alloc { id, size, .. } => {
                    live = live - sizes.insert(id, size).unwrap_or(0) + size;
                }
                Event::Free { id } => live -= sizes.remove(&id).unwrap_or(0),
                Event::Mode(_) | Event::Cleanup => {}
            }
            live
        })
        .collect()
}

/// The recorded allocator's summary, when the trace carries its reserved
/// bytes; `gpumem_peak` is the replay's peak reserved and `failed` the
/// allocations it refused.
pub fn recorded_allocator(
    trace: &Trace,
    program: &Program,
    gpumem_peak: u64,
    failed: u64,
) -> Option<RecordedAllocator> {
    let (name, reserved) = trace.origins.source_reserved()?;
    let (event, &peak) = reserved
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))?;
    let live = live_after_events(trace);
    let below = reserved.iter().zip(&live).filter(|(r, l)| r < l).count();
    Some(RecordedAllocator {
        name,
        peak_reserved_bytes: peak,
        peak_op: program.op_of_event(event) as u64 + 1,
        live_at_peak_bytes: live.get(event).copied().unwrap_or(0),
        below_live_events: below as u64,
        final_reserved_bytes: reserved.last().copied().unwrap_or(0),
        gpumem_ratio: (peak > 0 && failed == 0).then(|| gpumem_peak as f64 / peak as f64),
    })
}

/// The recorded allocator's reserved bytes as `(op from 0, bytes)` points,
/// at most `max_points` of them (each the maximum of its bucket, so no peak
/// is lost).
pub fn recorded_curve(trace: &Trace, program: &Program, max_points: usize) -> Vec<(u64, u64)> {
    let Some((_, reserved)) = trace.origins.source_reserved() else {
        return Vec::new();
    };
    let stride = reserved.len().div_ceil(max_points.max(1)).max(1);
    reserved
        .chunks(stride)
        .enumerate()
        .map(|(bucket, chunk)| {
            let event = bucket * stride;
            let max = chunk.iter().copied().max().unwrap_or(0);
            (program.op_of_event(event) as u64, max)
        })
        .collect()
}
