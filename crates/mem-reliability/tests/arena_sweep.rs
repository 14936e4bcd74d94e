//! The fault sweep on arena worlds: every virtual-memory call of each arena
//! scenario (reserve and free a range, create and release a chunk, map,
//! unmap) fails in turn, and nothing is leaked or half-mapped.
//!
//! After every run the full invariant pass runs (arena reserved bytes =
//! bytes the VM maps = granules under live slices + idle chunks, every
//! granule of a live arena allocation readable, contents intact, ledgers
//! charging chunks), then the teardown: every handle dropped and an
//! explicit cleanup leave the VM with no range, chunk or mapping, and the
//! tracking adaptor reports nothing outstanding.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use mem_pools::IoError;
use mem_reliability::{
    FaultMode, Limits, Op, Program, Scenario, VM_CALLS, Violation, World, count_calls, decode,
    sweep, sweep_program,
};
use mem_storage::{
    ComputeStorage, FaultPlan, Operation, StorageError, VirtualMemory, VirtualMemoryStats,
};

fn assert_clean(scenario: Scenario, mode: FaultMode) -> mem_reliability::SweepReport {
    let report = sweep(scenario, mode, None);
    if let Some((k, v)) = report.violations.first() {
        panic!(
            "{} ({mode:?}): {} of {} runs broke a promise; first: k={k} {v}",
            scenario.name(),
            report.violations.len(),
            report.runs
        );
    }
    assert_eq!(report.runs, report.calls, "every k was tried");
    report
}

#[test]
fn every_arena_scenario_survives_each_single_failed_vm_call() {
    for scenario in Scenario::ARENAS {
        assert!(scenario.program().arenas);
        let report = assert_clean(scenario, FaultMode::Nth);
        // Chunks sized to their runs: a scenario makes fewer calls than
        // with one chunk per granule (arena + pages: 18).
        assert!(
            report.calls >= 15,
            "{}: only {} VM calls",
            scenario.name(),
            report.calls
        );
        assert_eq!(report.faults, report.runs, "{}", scenario.name());
        // One failed call: a refusal changes nothing, not even the cache.
        assert_eq!(report.idle_on_refusal, 0, "{}", scenario.name());
        assert_eq!(report.released_on_refusal, 0, "{}", scenario.name());
    }
}

#[test]
fn every_arena_scenario_survives_a_vm_that_goes_away_at_any_call() {
    for scenario in Scenario::ARENAS {
        let report = assert_clean(scenario, FaultMode::From);
        assert!(report.faults >= report.runs, "{}", scenario.name());
    }
}

/// The VM calls `program` makes without faults, by kind.
fn vm_calls(program: &Program) -> HashSet<Operation> {
    let world = World::arenas(Limits::default());
    let seen = Arc::new(Mutex::new(HashSet::new()));
    let record = Arc::clone(&seen);
    world
        .device()
        .vm_faults()
        .expect("an arena world has virtual memory")
        .set_plan(FaultPlan::Matching(Arc::new(move |call| {
            record.lock().unwrap().insert(call.operation);
            false
        })));
    // `apply`, not `step`: the invariant pass disarms the plan.
    let mut world = world;
    for &op in &program.ops {
        world.apply(op).unwrap();
    }
    world.finish().unwrap();
    seen.lock().unwrap().clone()
}

#[test]
fn the_arena_sweeps_fail_every_kind_of_vm_call() {
    let mut seen = HashSet::new();
    for scenario in Scenario::ARENAS {
        let calls = vm_calls(&scenario.program());
        for op in [Operation::CreateChunk, Operation::Map, Operation::Unmap] {
            assert!(calls.contains(&op), "{}: no {op:?}", scenario.name());
        }
        seen.extend(calls);
    }
    for op in VM_CALLS {
        assert!(seen.contains(&op), "no arena scenario makes a {op:?} call");
    }
}

/// Run `scenario` fault-free on an arena world, keeping the world.
fn ran(scenario: Scenario) -> World {
    let mut world = World::arenas(Limits::default());
    for &op in &scenario.program().ops {
        world.step(op).unwrap();
    }
    world
}

#[test]
fn the_arena_scenarios_reach_what_they_are_named_for() {
    let summary = |s: Scenario| count_calls(&s.program()).unwrap().1;
    // Chunks created, and maps less those of cached chunks mapped again.
    let chunks = |world: &mut World| {
        (0..3).fold((0, 0), |(creates, maps), s| {
            let c = world.manager(s).stats().chunks;
            (creates + c.creates, maps + c.maps - c.reuses)
        })
    };
    let mut growth = ran(Scenario::ArenaGrowth);
    let vs = growth.device().vm_stats();
    assert!(vs.ranges_reserved >= 3, "a second range: {vs:?}");
    assert!(vs.ranges_freed >= 1, "a range given back: {vs:?}");
    assert!(vs.chunks_released >= 1, "the cache trimmed: {vs:?}");
    let (creates, maps) = chunks(&mut growth);
    // Each map is a chunk just created, sized to its run, or one a shed
    // for that run unmapped and the cache kept for it (a reuse).
    assert_eq!(maps, creates, "one map per chunk created or reused");
    assert!(vs.unmaps >= 1, "idle chunks shed: {vs:?}");
    let mut pages = ran(Scenario::ArenaPages);
    let (creates, maps) = chunks(&mut pages);
    assert_eq!(maps, creates, "one map per chunk created");
    assert!(creates > 0, "the arenas mapped chunks");
    let s = summary(Scenario::ArenaPages);
    assert!(s.moved > 0 && s.binds > 0, "{s:?}");
    let s = summary(Scenario::ArenaCapture);
    assert!(s.graph_handles > 0 && s.refusals > 0, "{s:?}");
    assert!(summary(Scenario::ArenaInstall).refusals > 0);
}

/// (usage reserved, usage in use, VM stats) of stream `s`.
fn state(world: &mut World, s: usize) -> (u64, u64, VirtualMemoryStats) {
    let usage = world.manager(s).memory_usage();
    let mut vm = world.device().vm_stats();
    // Counters of calls made (refused ones included) are not state.
    vm.refused_calls = 0;
    (usage.bytes_reserved, usage.bytes_in_use, vm)
}

#[test]
fn a_refused_chunk_is_a_typed_error_from_reserve_and_changes_nothing() {
    // Injected: the second chunk of the slice (granules 2-4 in one chunk,
    // then its partly covered last granule) is refused; the first is
    // given back.
    let mut world = World::arenas(Limits::default());
    world
        .step(Op::Reserve {
            stream: 0,
            size: 100_000,
        })
        .unwrap();
    let before = state(&mut world, 0);
    let created = Arc::new(Mutex::new(0));
    let count = Arc::clone(&created);
    world
        .device()
        .vm_faults()
        .unwrap()
        .set_plan(FaultPlan::Matching(Arc::new(move |call| {
            let mut n = count.lock().unwrap();
            *n += u64::from(call.operation == Operation::CreateChunk);
            call.operation == Operation::CreateChunk && *n == 2
        })));
    let err = world.manager(0).reserve(250_000).unwrap_err();
    world.device().disarm();
    assert!(
        matches!(
            err,
            IoError::Storage(StorageError::Injected {
                operation: "create_chunk",
                ..
            })
        ),
        "{err}"
    );
    let after = state(&mut world, 0);
    assert_eq!(after.0, before.0, "reserved bytes");
    assert_eq!(after.1, before.1, "bytes in use");
    assert_eq!(after.2.physical_bytes, before.2.physical_bytes);
    assert_eq!(after.2.mapped_bytes, before.2.mapped_bytes);
    world.check(1).unwrap();
    world.finish().unwrap();

    // Out of budget: the global budget refuses the chunks of a slice.
    let mut world = World::arenas(Limits {
        global: 256 << 10,
        ..Limits::default()
    });
    world
        .step(Op::Reserve {
            stream: 1,
            size: 60_000,
        })
        .unwrap();
    let before = state(&mut world, 1);
    // One chunk of the slice's whole granules (448 KiB) is more than the
    // budget can ever hold: `TooBig`, as the slice itself is.
    let err = world.manager(1).reserve(500_000).unwrap_err();
    assert!(
        matches!(
            err,
            IoError::Storage(StorageError::OutOfMemory { .. } | StorageError::TooBig { .. })
        ),
        "{err}"
    );
    let after = state(&mut world, 1);
    assert_eq!((after.0, after.1), (before.0, before.1));
    assert_eq!(after.2.physical_bytes, before.2.physical_bytes);
    assert_eq!(after.2.mapped_bytes, before.2.mapped_bytes);
    assert_eq!(world.device().global().charged(), before.2.physical_bytes);
    world.check(1).unwrap();
    world.finish().unwrap();
}

#[test]
fn every_corpus_program_survives_each_failed_vm_call_on_an_arena_world() {
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/program");
    let mut swept = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let program = Program {
            arenas: true,
            ..decode(&std::fs::read(&path).unwrap())
        };
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for mode in [FaultMode::Nth, FaultMode::From] {
            let report = sweep_program(&name, &program, mode, None);
            if let Some((k, v)) = report.violations.first() {
                panic!("{name} ({mode:?}): k={k}: {v}");
            }
            swept += report.runs;
        }
    }
    assert!(swept >= 300, "only {swept} faulted runs");
}

#[test]
fn the_arena_checker_catches_a_chunk_mapped_behind_the_engines_back() {
    let mut world = World::arenas(Limits::default());
    world
        .step(Op::Reserve {
            stream: 0,
            size: 70_000,
        })
        .unwrap();
    let vm = world.device().vm_faults().unwrap();
    let range = vm.reserve_range(1 << 20).unwrap();
    let chunk = vm.create_chunk(64 << 10).unwrap();
    vm.map(range.id, 0, chunk).unwrap();
    match world.check(1) {
        Err(Violation::Mismatch { what, .. }) => assert!(
            what.starts_with("host outstanding") || what.contains("VM"),
            "{what}"
        ),
        other => panic!("expected a chunk mismatch, got {other:?}"),
    }
    let report = world.device().vm_tracking().unwrap().virtual_leak_report();
    assert_eq!(report.chunks.len(), 3, "two of the engine's, one planted");
    assert!(world.manager(0).storage().bytes_allocated() > 0);
}
