//! `size-sweep`: one reservation plus its free through `Device`'s
//! defaults, at one size or at every size of the sweep (2 MiB … 64 GiB;
//! `gpumem_benches::size_sweep`). Run in release:
//!
//! - `size-sweep --size BYTES --pairs N`: N pairs at one size, after the
//!   first reservation; callgrind's inclusive count of
//!   `SizeSweep::pairs` ÷ N is the instructions per pair;
//! - `size-sweep [--runs R] [--pairs N]`: every size, R timed runs of N
//!   pairs each (default 5 × 2,000), a markdown table of the median ns
//!   per pair and its ratio to the smallest.

use std::process::ExitCode;
use std::time::Instant;

use gpumem_benches::size_sweep::{SizeSweep, storage_calls, sweep_sizes};
use gpumem_benches::table::human;

struct Args {
    size: Option<u64>,
    pairs: u64,
    runs: usize,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args {
        size: None,
        pairs: 2_000,
        runs: 5,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = value
            .parse::<u64>()
            .map_err(|e| format!("{flag} {value}: {e}"))?;
        match flag.as_str() {
            "--size" if number > 0 => parsed.size = Some(number),
            "--pairs" => parsed.pairs = number,
            "--runs" if number > 0 => parsed.runs = number as usize,
            "--size" | "--runs" => return Err(format!("{flag} needs a positive number")),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(parsed)
}

/// ns per pair of one run of `pairs` pairs (the device built untimed).
fn timed(size: u64, pairs: u64) -> gpumem_benches::Result<f64> {
    let sweep = SizeSweep::new(size)?;
    let start = Instant::now();
    sweep.pairs(pairs)?;
    Ok(start.elapsed().as_nanos() as f64 / pairs.max(1) as f64)
}

fn one(size: u64, pairs: u64) -> gpumem_benches::Result<()> {
    let sweep = SizeSweep::new(size)?;
    let calls = storage_calls(sweep.device());
    let start = Instant::now();
    sweep.pairs(pairs)?;
    let ns = start.elapsed().as_nanos() as f64 / pairs.max(1) as f64;
    let more = storage_calls(sweep.device()) - calls;
    println!("size {size} pairs {pairs} ns/pair {ns:.1} storage calls in the pairs {more}");
    Ok(())
}

fn table(runs: usize, pairs: u64) -> gpumem_benches::Result<()> {
    println!("| slice | slots | ns per pair | ÷ 2 MiB |");
    println!("|---|---:|---:|---:|");
    let mut first = None;
    for size in sweep_sizes() {
        let mut ns = (0..runs)
            .map(|_| timed(size, pairs))
            .collect::<gpumem_benches::Result<Vec<f64>>>()?;
        ns.sort_by(f64::total_cmp);
        let median = ns[ns.len() / 2];
        let base = *first.get_or_insert(median);
        println!(
            "| {} | {} | {median:.1} | {:.2}× |",
            human(size),
            size >> 21,
            median / base
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&args) {
        Ok(args) => args,
        Err(err) => {
            eprintln!("size-sweep: {err}\nusage: size-sweep [--size BYTES] [--pairs N] [--runs R]");
            return ExitCode::from(2);
        }
    };
    if cfg!(debug_assertions) {
        eprintln!("size-sweep: built without optimizations; ns per pair mean little");
    }
    let run = match args.size {
        Some(size) => one(size, args.pairs),
        None => table(args.runs, args.pairs),
    };
    match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("size-sweep: {err}");
            ExitCode::FAILURE
        }
    }
}
