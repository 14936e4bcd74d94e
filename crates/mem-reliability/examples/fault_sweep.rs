//! The full fault sweep (`cargo xtask fault-sweep`): every scenario, every
//! `k`, both fault modes; prints one line per scenario and mode, then every
//! violation found. Exits non-zero when any run broke a promise.
//!
//! `--max-runs N` bounds the runs per scenario and mode (spread evenly).

use std::process::ExitCode;

use mem_reliability::{FaultMode, Scenario, sweep};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let max_runs = match args.iter().position(|a| a == "--max-runs") {
        Some(i) => match args.get(i + 1).and_then(|v| v.parse::<u64>().ok()) {
            Some(n) => Some(n),
            None => {
                eprintln!("--max-runs needs a positive number of runs");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let started = std::time::Instant::now();
    let mut broken = 0usize;
    let (mut runs, mut faults, mut refusals) = (0u64, 0u64, 0u64);
    println!("scenario        mode  calls  runs  faults  refusals  violations");
    for scenario in Scenario::ALL {
        for mode in [FaultMode::Nth, FaultMode::From] {
            let report = sweep(scenario, mode, max_runs);
            println!(
                "{:<15} {:<5} {:>5} {:>5} {:>7} {:>9} {:>11}",
                scenario.name(),
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
            runs += report.runs;
            faults += report.faults;
            refusals += report.refusals;
            for (k, v) in &report.violations {
                println!("  k={k}: {v}");
            }
            broken += report.violations.len();
        }
    }
    println!(
        "total: {runs} runs, {faults} faults injected, {refusals} typed refusals checked, {broken} violations, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    if broken == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
