//! Run many pseudo-random programs (a stable stand-in for the fuzzer):
//! `cargo run --release -p mem-reliability --example explore -- [programs] [seed]`,
//! or replay every file of a directory (a fuzzer's working corpus):
//! `... --example explore -- --dir fuzz/target/corpus-work`.
//! `--arenas` (anywhere) runs each program on an arena world instead
//! (virtual memory, arena layouts; "fail the next call" fails the next
//! virtual-memory call). `--lazy-streams` decodes each for an arena world
//! whose streams complete their work late ([`decode_lazy`]), every unmap
//! checked by the reclamation oracle; `--misreport` with it tells the
//! engines all work is complete while it runs and counts the programs
//! the oracle catches (it must catch some).
//! Prints totals and the first violation (with its bytes) if any.

use std::process::ExitCode;

use mem_reliability::{Limits, Program, Violation, World, decode, decode_lazy, run_program};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn main() -> ExitCode {
    let mut all: Vec<String> = std::env::args().skip(1).collect();
    let arenas = all.iter().any(|a| a == "--arenas");
    let lazy = all.iter().any(|a| a == "--lazy-streams");
    let misreport = all.iter().any(|a| a == "--misreport");
    all.retain(|a| a != "--arenas" && a != "--lazy-streams" && a != "--misreport");
    let program_of = move |bytes: &[u8]| match lazy {
        true => decode_lazy(bytes),
        false => Program {
            arenas,
            ..decode(bytes)
        },
    };
    if let [flag, dir] = all.as_slice()
        && flag == "--dir"
    {
        return replay_dir(dir, program_of);
    }
    let mut args = all.into_iter();
    let programs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let mut rng = SmallRng::seed_from_u64(seed);
    if misreport {
        return caught(programs, &mut rng, program_of);
    }
    let mut total = mem_reliability::RunSummary::default();
    for i in 0..programs {
        let len = rng.random_range(0..600);
        let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let program = program_of(&bytes);
        match run_program(&program) {
            Ok(s) => total.add(s),
            Err(v) => {
                println!("program {i}: {v}\nbytes: {bytes:?}\nops: {:?}", program.ops);
                return ExitCode::FAILURE;
            }
        }
    }
    println!(
        "{programs} programs, {} ops, {} checks, {} typed refusals, {} faults injected, \
         {} relocated, {} binds, {} graph handles, {} refused reservations gave empty pages back \
         first (harmless: docs/reliability.md), {} refused arena reservations changed idle chunks, {} unmaps checked \
         ({} while some use was incomplete), 0 violations",
        total.ops,
        total.checks,
        total.refusals,
        total.faults,
        total.moved,
        total.binds,
        total.graph_handles,
        total.released_on_refusal,
        total.idle_on_refusal,
        total.unmaps_checked,
        total.unmaps_beside_open
    );
    ExitCode::SUCCESS
}

/// Run `programs` random programs with progress misreported; count those
/// the reclamation oracle catches. Any other violation is a failure.
fn caught(programs: u64, rng: &mut SmallRng, program_of: impl Fn(&[u8]) -> Program) -> ExitCode {
    let mut flagged = 0;
    for i in 0..programs {
        let len = rng.random_range(0..600);
        let bytes: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let program = program_of(&bytes);
        let mut world = World::for_program(&program, Limits::default());
        world.misreport_progress();
        let outcome = (program.ops.iter())
            .try_for_each(|&op| world.step(op))
            .and_then(|()| world.finish().map(|_| ()));
        match outcome {
            Ok(()) => {}
            Err(Violation::UnmappedInUse { .. }) => flagged += 1,
            Err(v) => {
                println!("program {i}: not the oracle: {v}\nbytes: {bytes:?}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!("progress misreported: the oracle caught {flagged} of {programs} programs");
    match flagged {
        0 => ExitCode::FAILURE,
        _ => ExitCode::SUCCESS,
    }
}

/// Replay every file of `dir` as a program.
fn replay_dir(dir: &str, program_of: impl Fn(&[u8]) -> Program) -> ExitCode {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            eprintln!("cannot read {dir}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut total = mem_reliability::RunSummary::default();
    let mut programs = 0u64;
    for entry in entries.flatten() {
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        let program = program_of(&bytes);
        match run_program(&program) {
            Ok(s) => total.add(s),
            Err(v) => {
                println!("{}: {v}\nops: {:?}", entry.path().display(), program.ops);
                return ExitCode::FAILURE;
            }
        }
        programs += 1;
    }
    println!(
        "{programs} programs from {dir}, {} ops, {} checks, {} typed refusals, {} faults injected, 0 violations",
        total.ops, total.checks, total.refusals, total.faults
    );
    ExitCode::SUCCESS
}
