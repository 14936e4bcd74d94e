//! The recorded allocator beside gpumem: what PyTorch itself reserved.
//!
//! A PyTorch snapshot records its caching allocator's segments (see
//! `trace/pytorch.rs`), so a replay can say "PyTorch reserved X at its
//! peak, gpumem would reserve Y" for the very program that ran — the
//! comparison a PyTorch user switching allocators asks for first — and the
//! plots can draw PyTorch's line beside gpumem's.

use crate::replay::Program;
use crate::report::RecordedAllocator;
use crate::trace::Trace;

/// The recorded allocator's summary, when the trace carries its reserved
/// bytes; `gpumem_peak` is the replay's peak reserved.
pub fn recorded_allocator(
    trace: &Trace,
    program: &Program,
    gpumem_peak: u64,
) -> Option<RecordedAllocator> {
    let (name, reserved) = trace.origins.source_reserved()?;
    let (event, &peak) = reserved
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))?;
    Some(RecordedAllocator {
        name,
        peak_reserved_bytes: peak,
        peak_op: program.op_of_event(event) as u64 + 1,
        final_reserved_bytes: reserved.last().copied().unwrap_or(0),
        gpumem_ratio: (peak > 0).then(|| gpumem_peak as f64 / peak as f64),
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
