//! `bench-quick`: the quick, deterministic benchmark table behind
//! `cargo xtask bench` (run in release; a few seconds).
//!
//! Prints one table of median ns per op with ratios against
//! `offset-allocator` and the system allocator, the fragmentation table of
//! every built-in workload (relocation off, trigger, eager), and the goals
//! read off both, then relocation on a device just above each workload's
//! peak. `--depths 1000,100000` changes the live-set sizes;
//! `--runs N` the runs per row; `--ops N` the timed ops per run;
//! `--smoke` the tiny suite of the tests (every line runs in seconds: the
//! GPU bundle's script on the stand-in driver in CI).

use std::process::ExitCode;

use gpumem_benches::fragmentation::fragmentation_rows;
use gpumem_benches::quick::{QuickConfig, depth_rows, replay_rows, size_rows};
use gpumem_benches::summary::{goals, render};
use gpumem_benches::tight::{tight_rows, tight_table};

/// Device size of the tight-device table, as a multiple of peak live bytes.
const TIGHT: f64 = 1.10;
use gpumem_benches::table::count;

fn parse(args: &[String], config: &mut QuickConfig) -> Result<(), String> {
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--smoke" {
            *config = QuickConfig::tiny();
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = |e: std::num::ParseIntError| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--depths" => {
                config.depths = value
                    .split(',')
                    .map(|d| d.trim().parse::<usize>().map_err(bad))
                    .collect::<Result<_, _>>()?;
                if config.depths.is_empty() || config.depths.contains(&0) {
                    return Err("--depths needs positive live-set sizes, e.g. 1000,100000".into());
                }
            }
            "--runs" => config.runs = value.parse().map_err(bad)?,
            "--ops" => config.ops = value.parse().map_err(bad)?,
            other => {
                return Err(format!(
                    "unknown option `{other}`; options: --depths N,N,.. --runs N --ops N --smoke"
                ));
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut config = QuickConfig::standard();
    if let Err(message) = parse(&args, &mut config) {
        eprintln!("bench-quick: {message}");
        return ExitCode::from(2);
    }
    if cfg!(debug_assertions) {
        eprintln!(
            "bench-quick: built without optimizations; run it with --release for real numbers"
        );
    }
    let run = || -> gpumem_benches::Result<String> {
        let mut speed = size_rows(&config)?;
        speed.extend(depth_rows(&config)?);
        speed.extend(replay_rows(&config)?);
        let frag = fragmentation_rows(&config.spec)?;
        let shallow = count(*config.depths.iter().min().unwrap_or(&1));
        let deep = count(*config.depths.iter().max().unwrap_or(&1));
        let goals = goals(
            &speed,
            &frag,
            &format!("{shallow} live"),
            &format!("{deep} live"),
        );
        let tight = tight_rows(&config.spec, TIGHT)?;
        Ok(format!(
            "{}\nRelocation on a device of {TIGHT:.2}× each workload's peak live bytes:\n\n{}",
            render(&speed, &frag, &goals),
            tight_table(&tight)
        ))
    };
    match run() {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("bench-quick: {err}");
            ExitCode::FAILURE
        }
    }
}
