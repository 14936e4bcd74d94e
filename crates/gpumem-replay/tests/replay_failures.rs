//! Replay when things go wrong: unknown frees, refused allocations, traces
//! larger than the device, malformed programs, and a missing CUDA driver.

use gpumem::storage::units::GIB;
use gpumem_replay::ReplayError;
use gpumem_replay::replay::{AllocBackend, Program, ReplayOptions, SystemBackend, replay};
use gpumem_replay::setup::{BackendKind, PoolSettings, replay_on};
use gpumem_replay::trace::Event;
use gpumem_replay::workload::{Workload, WorkloadSpec};

fn events(w: Workload, scale: f64) -> Vec<Event> {
    w.generate(&WorkloadSpec { seed: 11, scale }).unwrap()
}

#[test]
fn unknown_frees_are_counted_and_skipped() {
    let events = vec![
        Event::Free { id: 9 },
        Event::Alloc {
            id: 1,
            size: 100,
            stream: 0,
        },
        Event::Free { id: 1 },
        Event::Free { id: 1 },
    ];
    let program = Program::compile(&events).unwrap();
    assert_eq!(program.unknown_frees, 2);
    let r = replay(
        "t",
        &program,
        &mut SystemBackend::new(1000),
        &ReplayOptions::default(),
    )
    .unwrap()
    .report;
    assert_eq!((r.ops, r.unknown_frees, r.allocs, r.frees), (2, 2, 1, 1));
}

#[test]
fn a_failed_allocation_is_counted_and_its_free_skipped() {
    let events = vec![
        Event::Alloc {
            id: 1,
            size: 60,
            stream: 0,
        },
        Event::Alloc {
            id: 2,
            size: 60,
            stream: 0,
        },
        Event::Free { id: 2 },
        Event::Free { id: 1 },
        Event::Alloc {
            id: 3,
            size: 90,
            stream: 0,
        },
    ];
    let program = Program::compile(&events).unwrap();
    let mut backend = SystemBackend::new(100);
    let r = replay("t", &program, &mut backend, &ReplayOptions::default())
        .unwrap()
        .report;
    assert_eq!((r.failed_allocs, r.allocs, r.frees), (1, 2, 1));
    assert!(
        r.first_failure
            .as_deref()
            .unwrap()
            .starts_with("op 2: 60 bytes"),
        "{:?}",
        r.first_failure
    );
    assert_eq!(r.final_live_bytes, 90);
    assert_eq!(
        backend.live_bytes(),
        0,
        "allocations live at the end are released after the report"
    );
}

#[test]
fn a_trace_larger_than_the_simulated_device_fails_allocations_without_stopping() {
    let events = events(Workload::Training, 0.05);
    let program = Program::compile(&events).unwrap();
    // Paged pools: on the simulated device with arenas, arena chunks and
    // pages are each bounded by the device's size but not by it together
    // (without a budget), so the peak can exceed it; see docs/cli.md.
    let mut config = gpumem::config::GpumemConfig::default();
    config.pools = gpumem::config::PoolLayout::SubSlices;
    config.max_page_size = Some(4 * GIB);
    let settings = PoolSettings {
        config,
        ..PoolSettings::default()
    };
    let r = replay_on(
        BackendKind::Sim,
        16 * GIB,
        &settings,
        "t",
        &program,
        &ReplayOptions::default(),
    )
    .unwrap()
    .report;
    assert!(r.failed_allocs > 0);
    assert!(r.peak_reserved_bytes <= 16 * GIB);
    assert_eq!(r.ops, events.len() as u64);
}

#[test]
fn an_id_allocated_twice_while_live_is_refused_before_replay() {
    let events = vec![
        Event::Alloc {
            id: 5,
            size: 1,
            stream: 0,
        },
        Event::Alloc {
            id: 5,
            size: 1,
            stream: 0,
        },
    ];
    assert!(matches!(
        Program::compile(&events),
        Err(ReplayError::IdAlreadyLive { event: 1, id: 5 })
    ));
}

#[test]
fn the_cuda_backend_is_a_clean_error_without_a_driver() {
    if gpumem::storage::cuda_available() {
        println!("skipping: a CUDA driver is present");
        return;
    }
    let program = Program::compile(&events(Workload::Devlog, 0.02)).unwrap();
    let err = replay_on(
        BackendKind::Cuda,
        GIB,
        &PoolSettings::default(),
        "t",
        &program,
        &ReplayOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, ReplayError::CudaUnavailable), "{err}");
}
