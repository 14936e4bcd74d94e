//! Run many pseudo-random programs (a stable stand-in for the fuzzer):
//! `cargo run --release -p mem-reliability --example explore -- [programs] [seed]`.
//! Prints totals and the first violation (with its bytes) if any.

use std::process::ExitCode;

use mem_reliability::{decode, run_program};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let programs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let mut state: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let mut next = move || {
        // xorshift64*: deterministic, dependency-free.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let mut total = mem_reliability::RunSummary::default();
    for i in 0..programs {
        let len = (next() % 600) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let program = decode(&bytes);
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
         {} relocated, {} binds, {} graph handles, 0 violations",
        total.ops,
        total.checks,
        total.refusals,
        total.faults,
        total.moved,
        total.binds,
        total.graph_handles
    );
    ExitCode::SUCCESS
}
