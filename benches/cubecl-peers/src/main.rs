//! `cubecl-peers`: gpumem beside CubeCL's memory engine, one table per trace.
//!
//! An issue asked whether gpumem beats CubeCL's engine on every trace. This
//! binary answers with numbers: each trace (a built-in workload or a file
//! gpumem-cli reads) is compiled once and replayed through the same timed
//! loop (`gpumem_replay::replay::replay`) by gpumem's default `Device` and
//! offset-allocator (the rows of `gpumem compare`) and by cubecl-server
//! 0.11.3 and 0.12.0-pre.1 ([`v011`], [`v012`]), all on an 80 GiB device
//! that holds no memory. ns/op is the median of `--runs` runs (3 by
//! default), run by run over the rows so machine load spreads over all of
//! them; the bytes are deterministic and taken from the first run.
//!
//! It lives outside the gpumem workspace so CI never compiles cubecl; run
//! it with `cargo xtask bench-cubecl`.
//!
//! Usage: `cubecl-peers [--runs N] SOURCE...`, a SOURCE being `random`,
//! `training`, `serving`, `devlog`, `growth`, `span`, `live`, `span:SLOTS`,
//! `live:N` or a trace file. `span:SLOTS` is 2,000 reserve+free pairs of
//! one slice of SLOTS × 2 MiB between two live 3 MiB neighbours (they
//! share its edge slots), freed and reserved again in place: the arena's
//! cost per chunk slot on its own (the `replay_span` criterion group's
//! shape). `live:N` is the `live` workload holding N small slices
//! (512 B – 64 KiB; 20,000 at scale 1) and then freeing one at random and
//! reserving another N times: the cost of an operation with many live
//! slices per page.

mod rows;
mod table;
pub mod v011;
pub mod v012;

use std::path::Path;
use std::process::ExitCode;

use gpumem_replay::replay::Program;
use gpumem_replay::trace::{Event, TraceFormat, read_trace_file};
use gpumem_replay::workload::{LIVE_SLICES, Workload, WorkloadSpec};
use gpumem_replay::{ReplayError, Result};

/// Every built-in workload `gpumem replay` knows (growth and span included).
const WORKLOADS: [Workload; 7] = Workload::ALL;

/// Runs per row when `--runs` is not given.
const DEFAULT_RUNS: usize = 3;

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("cubecl-peers: error: {err}");
            ExitCode::FAILURE
        }
    }
}

fn usage(reason: String) -> ReplayError {
    ReplayError::InvalidArgument {
        option: "cubecl-peers",
        value: std::env::args().skip(1).collect::<Vec<_>>().join(" "),
        reason: format!("{reason}; usage: cubecl-peers [--runs N] SOURCE..."),
    }
}

fn run(args: Vec<String>) -> Result<()> {
    let mut runs = DEFAULT_RUNS;
    let mut sources = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == "--runs" {
            runs = args
                .next()
                .and_then(|n| n.parse().ok())
                .filter(|&n| (1..=99).contains(&n))
                .ok_or_else(|| usage("--runs takes a number from 1 to 99".to_string()))?;
        } else {
            sources.push(arg);
        }
    }
    if sources.is_empty() {
        return Err(usage("no SOURCE given".to_string()));
    }
    for source in &sources {
        let program = load(source)?;
        let table = rows::measure(source, &program, runs)?;
        print!("{table}");
    }
    println!("{}", table::NOTES);
    Ok(())
}

/// A built-in workload (seed 42, scale 1, as `gpumem compare`'s defaults),
/// a `span:SLOTS` shape or a trace file, compiled.
fn load(source: &str) -> Result<Program> {
    let span = source.strip_prefix("span:").map(|n| n.parse::<u64>());
    let events = match (WORKLOADS.into_iter().find(|w| w.name() == source), span) {
        (Some(workload), _) => workload.generate(&WorkloadSpec::default())?,
        (None, Some(Ok(slots))) if (1..=16_384).contains(&slots) => span_pairs(slots << 21),
        (None, Some(_)) => return Err(usage(format!("{source}: SLOTS is 1 to 16384"))),
        (None, None) => match source.strip_prefix("live:").map(|n| n.parse::<u64>()) {
            Some(Ok(n)) if (1..=1_000_000).contains(&n) => {
                Workload::Live.generate(&WorkloadSpec {
                    scale: n as f64 / LIVE_SLICES as f64,
                    ..WorkloadSpec::default()
                })?
            }
            Some(_) => return Err(usage(format!("{source}: N is 1 to 1000000"))),
            None => read_trace_file(Path::new(source), TraceFormat::Auto)?.events,
        },
    };
    Program::compile(&events)
}

/// 2,000 reserve+free pairs of one slice of `bytes` between two live
/// 3 MiB neighbours, on the default stream.
fn span_pairs(bytes: u64) -> Vec<Event> {
    let alloc = |id, size| Event::Alloc {
        id,
        size,
        stream: 0,
    };
    let mut events = vec![alloc(0, 3 << 20), alloc(1, bytes), alloc(2, 3 << 20)];
    // The slice freed is the last one reserved (id 1, then 3, 4, ...).
    for id in 3..2_003 {
        let last = if id == 3 { 1 } else { id - 1 };
        events.push(Event::Free { id: last });
        events.push(alloc(id, bytes));
    }
    events
}
