//! The reclamation oracle on lazy streams: no physical memory leaves an
//! address while a recorded use of it is incomplete.
//!
//! An arena world with lazy streams completes each stream's work only when
//! a program says so; the engines are told both cursors before each call;
//! every unmap the virtual memory makes is checked against the uses still
//! incomplete. A runtime that reports work complete too early must be
//! caught: that is how these tests prove the oracle can fail.

use mem_reliability::{
    FaultMode, Limits, Program, Scenario, Violation, World, decode_lazy, run_program, sweep_program,
};
use proptest::prelude::*;

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/program");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// Run `program` on its world, the engines told all work is complete
/// whenever progress is reported (a wrong runtime); the first violation.
fn run_misreported(program: &Program) -> Option<Violation> {
    let mut world = World::for_program(program, Limits::default());
    world.misreport_progress();
    for &op in &program.ops {
        if let Err(v) = world.step(op) {
            return Some(v);
        }
    }
    world.finish().err()
}

#[test]
fn freed_chunks_wait_for_their_streams_work_and_go_once_it_completes() {
    let program = Scenario::ArenaStreams.program();
    assert!(program.lazy_streams && program.arenas);
    let mut world = World::for_program(&program, Limits::default());
    let (mut waited, mut unmapped_while_waiting) = (0, 0);
    for &op in &program.ops {
        let before = world.device().vm_stats().unmaps;
        world.step(op).unwrap();
        let waiting = (0..3).any(|s| world.manager(s).arena_chunks_waiting());
        waited += u64::from(waiting);
        if waiting && world.device().vm_stats().unmaps > before {
            unmapped_while_waiting += 1;
        }
    }
    let summary = world.summary();
    assert!(waited >= 5, "idle chunks waited after only {waited} steps");
    assert!(summary.unmaps_checked >= 3, "{summary:?}");
    assert!(summary.unmaps_beside_open >= 1, "{summary:?}");
    assert!(
        unmapped_while_waiting >= 1,
        "no ready chunk went while another waited"
    );
    let log = world.device().use_log().unwrap();
    assert!(log.open_uses() > 0, "the program ends with work running");
    world.finish().unwrap();
}

#[test]
fn a_runtime_that_reports_work_complete_too_early_is_caught() {
    match run_misreported(&Scenario::ArenaStreams.program()) {
        Some(Violation::UnmappedInUse {
            lo,
            hi,
            use_lo,
            use_hi,
            cursor,
            completed,
            ..
        }) => {
            assert!(use_lo < hi && lo < use_hi, "the use overlaps the unmap");
            assert!(completed < cursor, "the use was incomplete");
        }
        other => panic!("the oracle missed an unmap under running work: {other:?}"),
    }
    // The same program on streams that complete at once is clean.
    let mut eager = Scenario::ArenaStreams.program();
    eager.lazy_streams = false;
    assert_eq!(run_misreported(&eager), None);
}

#[test]
fn the_oracle_flags_corpus_programs_under_a_wrong_runtime_and_passes_them_under_a_right_one() {
    let (mut flagged, mut ran) = (0, 0);
    for (name, bytes) in corpus() {
        let program = decode_lazy(&bytes);
        if let Err(v) = run_program(&program) {
            panic!("{name} on lazy streams: {v}\nops: {:?}", program.ops);
        }
        ran += 1;
        match run_misreported(&program) {
            Some(Violation::UnmappedInUse { .. }) => flagged += 1,
            Some(other) => panic!("{name} misreported: not the oracle: {other}"),
            None => {}
        }
    }
    assert!(ran >= 10);
    assert!(flagged >= 3, "only {flagged} of {ran} programs caught");
}

#[test]
fn every_corpus_program_on_lazy_streams_survives_failed_vm_calls() {
    let mut swept = 0;
    for (name, bytes) in corpus() {
        let program = decode_lazy(&bytes);
        // Bounded in `cargo test`; the fault-sweep example tries every k.
        let report = sweep_program(&name, &program, FaultMode::Nth, Some(12));
        if let Some((k, v)) = report.violations.first() {
            panic!("{name} on lazy streams: k={k}: {v}");
        }
        swept += report.runs;
    }
    assert!(swept >= 100, "only {swept} faulted runs");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    #[cfg_attr(miri, ignore)]
    fn random_programs_on_lazy_streams_keep_the_reclamation_rule(
        bytes in prop::collection::vec(any::<u8>(), 0..600),
    ) {
        let program = decode_lazy(&bytes);
        if let Err(v) = run_program(&program) {
            return Err(TestCaseError::fail(format!("{v}\nops: {:?}", program.ops)));
        }
    }
}
