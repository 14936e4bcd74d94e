//! The committed fuzz corpus, replayed on stable: the same decoder and
//! model as the cargo-fuzz target, so regressions are caught without nightly.

use std::collections::BTreeSet;
use std::path::PathBuf;

use mem_reliability::{Op, decode, decode_lazy, run_program};

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/program");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read the corpus at {}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("a readable directory entry").path();
            let bytes = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                bytes,
            )
        })
        .collect();
    files.sort();
    files
}

fn kind(op: &Op) -> &'static str {
    match op {
        Op::Reserve { .. } => "reserve",
        Op::Write { .. } => "write",
        Op::Drop { .. } => "drop",
        Op::DropOnThread { .. } => "drop on thread",
        Op::Bind { .. } => "bind",
        Op::Mode { .. } => "mode",
        Op::Cleanup { .. } => "cleanup",
        Op::Install { .. } => "install",
        Op::Relocate { .. } => "relocate",
        Op::RelocateFor { .. } => "relocate for a reason",
        Op::Raw { .. } => "raw",
        Op::ReleaseRaw { .. } => "release raw",
        Op::CaptureBegin { .. } => "capture begin",
        Op::CapturePrimingEnd { .. } => "capture priming end",
        Op::CaptureEnd { .. } => "capture end",
        Op::DropGraphs { .. } => "drop graphs",
        Op::BudgetReserve { .. } => "budget reserve",
        Op::BudgetAlloc { .. } => "budget alloc",
        Op::BudgetDrop { .. } => "budget drop",
        Op::BudgetReap => "budget reap",
        Op::FailNext => "fail next",
        Op::Complete { .. } => "complete",
    }
}

#[test]
fn every_corpus_program_keeps_every_invariant() {
    let files = corpus();
    assert!(
        files.len() >= 10,
        "the corpus holds only {} programs",
        files.len()
    );
    for (name, bytes) in &files {
        let program = decode(bytes);
        assert!(!program.is_empty(), "{name} decodes to no op");
        if let Err(v) = run_program(&program) {
            panic!("corpus program {name}: {v}\nops: {:?}", program.ops);
        }
    }
}

#[test]
fn every_corpus_program_keeps_every_invariant_on_lazy_arena_streams() {
    // The fuzz target runs each input decoded both ways; so does this.
    let mut completes = 0;
    for (name, bytes) in &corpus() {
        let program = decode_lazy(bytes);
        assert!(program.lazy_streams);
        completes += program
            .ops
            .iter()
            .filter(|op| matches!(op, Op::Complete { .. }))
            .count();
        if let Err(v) = run_program(&program) {
            panic!(
                "corpus program {name} on lazy streams: {v}\nops: {:?}",
                program.ops
            );
        }
    }
    assert!(
        completes > 0,
        "no corpus program lets a stream's work complete"
    );
}

#[test]
fn the_corpus_exercises_every_kind_of_op() {
    let seen: BTreeSet<&str> = corpus()
        .iter()
        .flat_map(|(_, bytes)| decode(bytes).ops)
        .map(|op| kind(&op))
        .collect();
    // All but `Complete`, which only lazy-stream programs decode.
    assert_eq!(seen.len(), 21, "kinds seen: {seen:?}");
}
