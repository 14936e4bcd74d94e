//! The replay loop and its report, checked against numbers computed here
//! independently, on the system baseline and on gpumem's pools.

use std::collections::HashMap;

use gpumem::Device;
use gpumem::config::PoolLayout;
use gpumem::storage::units::GIB;
use gpumem_replay::replay::{DeviceBackend, Program, ReplayOptions, replay};
use gpumem_replay::setup::{BackendKind, PoolSettings, replay_on};
use gpumem_replay::trace::{Event, read_jsonl, write_jsonl};
use gpumem_replay::workload::{Workload, WorkloadSpec};

fn events(w: Workload, scale: f64) -> Vec<Event> {
    w.generate(&WorkloadSpec { seed: 11, scale }).unwrap()
}

/// (peak live, final live) computed without the replay code.
fn live_profile(events: &[Event]) -> (u64, u64) {
    let mut sizes = HashMap::new();
    let (mut live, mut peak) = (0u64, 0u64);
    for e in events {
        match *e {
            Event::Alloc { id, size, .. } => {
                sizes.insert(id, size);
                live += size;
                peak = peak.max(live);
            }
            Event::Free { id } => live -= sizes.remove(&id).unwrap_or(0),
            _ => {}
        }
    }
    (peak, live)
}

fn run(kind: BackendKind, events: &[Event], points: usize) -> gpumem_replay::replay::ReplayRun {
    let program = Program::compile(events).unwrap();
    let options = ReplayOptions {
        timeline_points: points,
        progress: None,
        find_peak_reserved_op: false,
    };
    replay_on(
        kind,
        80 * GIB,
        &PoolSettings::default(),
        "test",
        &program,
        &options,
    )
    .unwrap()
}

#[test]
fn report_fields_agree_with_an_independent_count_on_every_workload() {
    for (w, scale) in [
        (Workload::Devlog, 1.0),
        (Workload::Random, 0.05),
        (Workload::Training, 0.1),
        (Workload::Serving, 0.05),
    ] {
        let events = events(w, scale);
        let (peak, end) = live_profile(&events);
        for kind in [BackendKind::System, BackendKind::Sim] {
            let r = run(kind, &events, 0).report;
            let name = format!("{} on {kind:?}", w.name());
            assert_eq!(r.ops, events.len() as u64, "{name}");
            assert_eq!(r.peak_live_bytes, peak, "{name}");
            assert_eq!(r.final_live_bytes, end, "{name}");
            assert_eq!(
                r.backend_live_bytes, end,
                "{name}: the backend agrees on live bytes"
            );
            assert!(r.peak_reserved_bytes >= r.peak_live_bytes, "{name}");
            assert!(r.final_reserved_bytes >= r.final_live_bytes, "{name}");
            assert_eq!(
                r.fragmentation.peak,
                Some(r.peak_reserved_bytes as f64 / r.peak_live_bytes as f64),
                "{name}"
            );
            assert_eq!(r.ns_per_op, r.wall_ns as f64 / r.ops as f64, "{name}");
            assert_eq!((r.failed_allocs, r.unknown_frees), (0, 0), "{name}");
            assert!(r.storage_allocs > 0, "{name}");
        }
    }
}

#[test]
fn the_peak_reserved_includes_what_the_engine_held_within_a_call() {
    // devlog's 32 MiB requests grow the pool's page size, so pages can be
    // taken and released inside one reserve; sampling between calls alone
    // would miss that moment.
    let events = events(Workload::Devlog, 0.02);
    let program = Program::compile(&events).unwrap();
    let device = Device::simulated(80 * GIB)
        .pools(PoolLayout::SubSlices)
        .ignore_env()
        .build()
        .unwrap();
    let mut backend = DeviceBackend::new("sim", device);
    let options = ReplayOptions {
        timeline_points: 10_000,
        progress: None,
        find_peak_reserved_op: false,
    };
    let run = replay("devlog", &program, &mut backend, &options).unwrap();
    let engine_peak = backend.device().stats().reserved_bytes.peak;
    let sampled = run.timeline.iter().map(|s| s.reserved).max().unwrap();
    assert_eq!(run.report.peak_reserved_bytes, engine_peak);
    assert!(engine_peak >= sampled);
    assert!(run.report.peak_reserved_bytes >= run.report.peak_live_bytes);
}

#[test]
fn the_system_baseline_reserves_exactly_what_is_live_with_one_storage_alloc_per_request() {
    let events = events(Workload::Random, 0.02);
    let r = run(BackendKind::System, &events, 0).report;
    assert_eq!(r.peak_reserved_bytes, r.peak_live_bytes);
    assert_eq!(r.final_reserved_bytes, r.final_live_bytes);
    assert_eq!(r.storage_allocs, r.allocs);
}

#[test]
fn pools_reuse_pages_so_they_allocate_far_less_often_than_the_baseline() {
    let events = events(Workload::Serving, 0.05);
    let system = run(BackendKind::System, &events, 0).report;
    let sim = run(BackendKind::Sim, &events, 0).report;
    assert!(
        sim.storage_allocs * 10 < system.storage_allocs,
        "{} vs {}",
        sim.storage_allocs,
        system.storage_allocs
    );
    assert!(!sim.pools.is_empty());
    let pool_peak: u64 = sim.pools.iter().map(|p| p.peak_bytes_in_use).max().unwrap();
    assert!(pool_peak > 0);
}

#[test]
fn the_host_backend_replays_with_every_pattern_intact() {
    let events = events(Workload::Devlog, 0.2);
    let r = run(BackendKind::Host, &events, 0).report;
    assert_eq!(r.backend, "host");
    assert_eq!(r.peak_live_bytes, live_profile(&events).0);
    assert_eq!(r.failed_allocs, 0);
}

#[test]
fn the_timeline_is_bounded_and_keeps_the_peaks() {
    let events = events(Workload::Random, 0.1);
    let run = run(BackendKind::Sim, &events, 500);
    assert!(run.timeline.len() <= 500 && run.timeline.len() > 100);
    assert_eq!(
        run.timeline.iter().map(|s| s.live).max(),
        Some(run.report.peak_live_bytes)
    );
    // Reserved is sampled between calls; the engine's own peak may also
    // include a page taken and another released within one call.
    let sampled = run.timeline.iter().map(|s| s.reserved).max().unwrap();
    assert!(sampled <= run.report.peak_reserved_bytes);
    assert!(sampled >= run.report.peak_live_bytes);
}

#[test]
fn a_recorded_trace_replays_to_the_same_numbers_as_the_workload() {
    let events = events(Workload::Serving, 0.03);
    let mut bytes = Vec::new();
    write_jsonl(&mut bytes, &events).unwrap();
    let read = read_jsonl(bytes.as_slice()).unwrap();
    assert_eq!(read.events, events);
    let a = run(BackendKind::Sim, &events, 0).report;
    let b = run(BackendKind::Sim, &read.events, 0).report;
    assert_eq!(
        (
            a.ops,
            a.peak_live_bytes,
            a.peak_reserved_bytes,
            a.final_reserved_bytes,
            a.storage_allocs
        ),
        (
            b.ops,
            b.peak_live_bytes,
            b.peak_reserved_bytes,
            b.final_reserved_bytes,
            b.storage_allocs
        )
    );
}
