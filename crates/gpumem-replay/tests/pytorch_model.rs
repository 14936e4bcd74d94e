//! The modeled PyTorch caching allocator (`compare`'s `pytorch` rows)
//! against what PyTorch itself recorded in the repository's snapshot
//! fixtures: the peak of its reserved line (from the snapshot's segment
//! events, anchored by its `segments` list) beside the model's peak
//! reserved on the same trace (pre-existing blocks live from op 0).
//!
//! The fixtures are Python-written stand-ins, not GPU recordings: their
//! segments were written by hand, not by PyTorch's policy, and each one's
//! segment history is incomplete (the ring buffer starts mid-run, or
//! segments existed before recording), so the errors here are what they
//! measure, not the 5 % a complete history is held to (see docs/cli.md,
//! "The pytorch rows").

use std::path::PathBuf;

use gpumem::storage::DriverCosts;
use gpumem::storage::units::{GIB, MIB};
use gpumem_replay::compare::pytorch::{Policy, PytorchBackend};
use gpumem_replay::replay::{Program, ReplayOptions, replay};
use gpumem_replay::side_by_side::recorded_allocator;
use gpumem_replay::trace::{TraceFormat, read_trace_file_on};

/// (PyTorch's recorded peak reserved, the model's peak reserved).
fn peaks(name: &str, device: Option<usize>, expandable: bool) -> (u64, u64) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let trace = read_trace_file_on(&path, TraceFormat::Pytorch, device).unwrap();
    let program = Program::compile(&trace.events).unwrap();
    let policy = Policy {
        expandable,
        ..Policy::default()
    };
    let mut backend = PytorchBackend::new("pytorch", policy, 80 * GIB, DriverCosts::A100);
    let report = replay(name, &program, &mut backend, &ReplayOptions::default())
        .unwrap()
        .report;
    assert_eq!(report.failed_allocs, 0, "{name}");
    let recorded = recorded_allocator(
        &trace,
        &program,
        report.peak_reserved_bytes,
        report.failed_allocs,
    )
    .unwrap();
    (recorded.peak_reserved_bytes, report.peak_reserved_bytes)
}

/// (model − recorded) ÷ recorded.
fn error(recorded: u64, model: u64) -> f64 {
    (model as f64 - recorded as f64) / recorded as f64
}

#[test]
fn on_the_cpp_stacks_snapshot_the_model_is_within_5_percent_of_pytorch() {
    // The weights were loaded before recording, but their segments are in
    // the snapshot and their blocks live from op 0; the 8/8/16/32 MiB
    // steps and the 96 MiB activation fill segments as PyTorch did.
    let (recorded, model) = peaks("cpp_stacks.pickle", None, false);
    assert_eq!((recorded, model), (736 * MIB, 740 * MIB));
    assert!(
        error(recorded, model).abs() <= 0.05,
        "{}",
        error(recorded, model)
    );
}

#[test]
fn on_the_small_snapshot_pytorch_held_a_cached_segment_no_event_explains() {
    // PyTorch's line counts a 20 MiB segment that was cached before
    // recording and freed at the end, holding no block the trace knows:
    // the history is incomplete, and the model (which never saw it) stays
    // 40 % below.
    let (recorded, model) = peaks("snapshot.pickle", None, false);
    assert_eq!((recorded, model), (40 * MIB, 24 * MIB));
    assert!((error(recorded, model) + 0.40).abs() < 1e-9);
}

#[test]
fn on_the_wrapped_expandable_snapshot_the_pages_mapped_before_the_ring_are_unknown() {
    // The ring buffer wrapped: the pages PyTorch mapped and the blocks it
    // freed before the recorded window are not in it, so its line starts
    // with memory the trace cannot attribute; the model is 25 % below with
    // expandable segments, 30 % below without.
    let (recorded, expandable) = peaks("wrapped_expandable.pickle", Some(1), true);
    let (_, segments) = peaks("wrapped_expandable.pickle", Some(1), false);
    assert_eq!(recorded, 320 * MIB);
    assert_eq!((expandable, segments), (240 * MIB, 224 * MIB));
    assert!((error(recorded, expandable) + 0.25).abs() < 1e-9);
}
