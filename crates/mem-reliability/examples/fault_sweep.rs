//! The full fault sweep (`cargo xtask fault-sweep`): every scenario and
//! every corpus program (`fuzz/corpus/program/*`), every `k`, both fault
//! modes; prints one line per program and mode, then every violation found,
//! then the totals. Exits non-zero when any run broke a promise. The corpus
//! is swept twice: on the paged world (device calls fail) and on an arena
//! world (`arena/corpus/*`: virtual-memory calls fail), as are the arena
//! scenarios (`arena ...`), and a third time decoded for lazy streams
//! (`lazy/corpus/*`, [`decode_lazy`]: an arena world whose streams complete
//! their work late, every unmap checked by the reclamation oracle).
//!
//! `--max-runs N` bounds the runs per program and mode (spread evenly).

use std::path::PathBuf;
use std::process::ExitCode;

use mem_reliability::{
    FaultMode, Program, Scenario, SweepReport, decode, decode_lazy, sweep_program,
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let max_runs = match args.iter().position(|a| a == "--max-runs") {
        Some(i) => match args.get(i + 1).and_then(|v| v.parse::<u64>().ok()) {
            Some(n) if n > 0 => Some(n),
            _ => {
                eprintln!("--max-runs needs a positive number of runs");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let mut programs: Vec<(String, Program)> = Scenario::ALL
        .iter()
        .map(|s| (s.name().to_string(), s.program()))
        .collect();
    let (mut arena_corpus, mut lazy_corpus) = (Vec::new(), Vec::new());
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/program");
    match std::fs::read_dir(&corpus) {
        Ok(dir) => {
            let mut files: Vec<PathBuf> = dir.filter_map(|e| e.ok().map(|e| e.path())).collect();
            files.sort();
            for path in files {
                match std::fs::read(&path) {
                    Ok(bytes) => {
                        let name = path.file_name().unwrap_or_default().to_string_lossy();
                        let program = decode(&bytes);
                        arena_corpus.push((
                            format!("arena/corpus/{name}"),
                            Program {
                                arenas: true,
                                ..program.clone()
                            },
                        ));
                        programs.push((format!("corpus/{name}"), program));
                        lazy_corpus.push((format!("lazy/corpus/{name}"), decode_lazy(&bytes)));
                    }
                    Err(e) => eprintln!("skipping {}: {e}", path.display()),
                }
            }
        }
        Err(e) => eprintln!("no corpus at {}: {e}", corpus.display()),
    }
    programs.extend(arena_corpus);
    programs.extend(lazy_corpus);
    let started = std::time::Instant::now();
    let mut total = SweepReport {
        name: "total".into(),
        mode: FaultMode::Nth,
        calls: 0,
        runs: 0,
        faults: 0,
        refusals: 0,
        released_on_refusal: 0,
        idle_on_refusal: 0,
        shed_on_refusal: 0,
        unmaps_checked: 0,
        violations: Vec::new(),
    };
    println!(
        "{:<32} {:<5} {:>6} {:>6} {:>7} {:>9} {:>10}",
        "program", "mode", "calls", "runs", "faults", "refusals", "violations"
    );
    for (name, program) in &programs {
        for mode in [FaultMode::Nth, FaultMode::From] {
            let report = sweep_program(name, program, mode, max_runs);
            println!(
                "{:<32} {:<5} {:>6} {:>6} {:>7} {:>9} {:>10}",
                name,
                match mode {
                    FaultMode::Nth => "nth",
                    FaultMode::From => "from",
                },
                report.calls,
                report.runs,
                report.faults,
                report.refusals,
                report.violations.len()
            );
            for (k, v) in &report.violations {
                println!("  k={k}: {v}");
            }
            total.calls += report.calls;
            total.runs += report.runs;
            total.faults += report.faults;
            total.refusals += report.refusals;
            total.released_on_refusal += report.released_on_refusal;
            total.idle_on_refusal += report.idle_on_refusal;
            total.shed_on_refusal += report.shed_on_refusal;
            total.unmaps_checked += report.unmaps_checked;
            total.violations.extend(report.violations);
        }
    }
    println!(
        "total: {} programs, {} runs, {} faults injected, {} typed refusals checked, {} violations, \
         {} refused reservations gave empty pages back first (harmless: docs/reliability.md), \
         {} refused arena reservations changed idle chunks (undo refused too), \
         {} had shed idle chunks first, {} unmaps checked by the reclamation oracle, {:.1} s",
        programs.len(),
        total.runs,
        total.faults,
        total.refusals,
        total.violations.len(),
        total.released_on_refusal,
        total.idle_on_refusal,
        total.shed_on_refusal,
        total.unmaps_checked,
        started.elapsed().as_secs_f64()
    );
    if total.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
