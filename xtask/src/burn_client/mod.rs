//! `cargo xtask burn-client [--engine cubecl|gpumem|both] [--repeat N]
//! [--trace PATH] [--part runs|scenarios|all]`: Burn 0.23 models trained
//! and run on CubeCL's wgpu runtime over Vulkan (lavapipe on a CPU-only
//! machine), with the runtime's main memory on CubeCL's engine and on
//! gpumem's, side by side.
//!
//! It writes a scratch crate under `target/burn-client/` (`scratch.rs`):
//! one binary, the four runs in `xtask/burn-client/src/` (a CNN trained
//! with Adam, a small transformer LM trained on varying lengths and batch
//! sizes, its inference on varying batch sizes, and an LSTM trained on
//! varying lengths and batch sizes, all on generated data).
//! Its cubecl-wgpu picks the engine at run time, so Burn builds once for
//! both. Each run is its own process per engine (`runs.rs`); the oracle
//! wants every step's loss, the final parameters' checksum and (inference)
//! every output bit-identical between engines and between repeats, and
//! prints "losses identical" per run or fails. The table (`table.rs`) is
//! printed and written to `target/burn-client/table.md`; steps per second
//! are the median of `--repeat` runs (default 1). `--trace PATH` records
//! the transformer's training on gpumem as a gpumem trace
//! (`GPUMEM_TRACE`); a PATH holding `{run}` records every run, the run's
//! name in its place. After the runs come the memory scenarios users
//! reported (`scenarios.rs`), one process per scenario and engine, their
//! tables printed and written to `target/burn-client/scenarios.md`;
//! `--part runs` or `--part scenarios` runs one half alone. Skips, saying
//! why, without Vulkan, with too little disk, or with
//! `GPUMEM_SKIP_BURN_CLIENT` set.

use std::path::{Path, PathBuf};

pub(crate) mod runs;
mod scenarios;
pub(crate) mod scratch;
mod table;

use crate::cubecl_client::engine::Engine;
use crate::cubecl_client::vulkan;
use crate::{cargo, run};
use runs::{Outcome, RUNS, differs, execute};
use table::Row;

/// Set, it makes the task skip.
const SKIP_VAR: &str = "GPUMEM_SKIP_BURN_CLIENT";

/// Free disk a cold build needs (about 260 crates: 1.5 GiB measured, with
/// room to spare), and a warm one on top of what is built.
const COLD_BUILD_BYTES: u64 = 5 << 30;
const WARM_BUILD_BYTES: u64 = 1 << 30;

pub(crate) fn root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}

struct Args {
    engines: Vec<Engine>,
    repeat: usize,
    trace: Option<PathBuf>,
    /// Whether the runs and the scenarios run (`--part`).
    runs: bool,
    scenarios: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let usage = "usage: cargo xtask burn-client [--engine cubecl|gpumem|both] [--repeat N] \
                 [--trace PATH] [--part runs|scenarios|all]";
    let mut parsed = Args {
        engines: vec![Engine::Cubecl, Engine::Gpumem],
        repeat: 1,
        trace: None,
        runs: true,
        scenarios: true,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let value = args.next().ok_or(usage)?;
        match arg.as_str() {
            "--engine" => parsed.engines = Engine::parse(value)?,
            "--repeat" => {
                parsed.repeat = value.parse().ok().filter(|&n| n > 0).ok_or(usage)?;
            }
            "--trace" => parsed.trace = Some(PathBuf::from(value)),
            "--part" => {
                (parsed.runs, parsed.scenarios) = match value.as_str() {
                    "runs" => (true, false),
                    "scenarios" => (false, true),
                    "all" => (true, true),
                    _ => return Err(format!("{usage}; got --part {value:?}")),
                };
            }
            _ => return Err(format!("{usage}; got {arg:?}")),
        }
    }
    Ok(parsed)
}

/// Runs the task; `Ok(Some(reason))` when it skipped.
pub fn burn_client(args: &[String]) -> Result<Option<String>, String> {
    let args = parse_args(args)?;
    let skip = |why: String| {
        let why = format!("skipping burn-client: {why}");
        eprintln!("{why}");
        Ok(Some(why))
    };
    if std::env::var_os(SKIP_VAR).is_some() {
        return skip(format!("{SKIP_VAR} is set"));
    }
    if let Some(why) = vulkan::missing() {
        return skip(why);
    }
    let root = root();
    let target = root.join("target");
    let need = (COLD_BUILD_BYTES, WARM_BUILD_BYTES);
    if let Some(why) = crate::disk::short_of(
        &target,
        &target.join("burn-client/target/release"),
        "Burn",
        need,
    ) {
        return skip(why);
    }
    let adapter = root.join("crates/gpumem-cubecl");
    if !adapter.join("Cargo.toml").exists() {
        return Err(format!("the adapter is missing: {}", adapter.display()));
    }
    eprintln!("burn-client: Vulkan devices: {:?}", vulkan::devices());
    let scratch = scratch::prepare(&root, &adapter)?;
    let mut build = cargo(&["build", "--release", "-j", "2", "--manifest-path"]);
    build
        .arg(scratch.manifest())
        .arg("--target-dir")
        .arg(scratch.target())
        .env("CARGO_INCREMENTAL", "0");
    run(&mut build)?;
    if args.runs {
        run_all(&args, &scratch)?;
    }
    if args.scenarios {
        run_scenarios(&args, &scratch)?;
    }
    Ok(None)
}

/// The runs, compared between engines; the table printed and written.
fn run_all(args: &Args, scratch: &scratch::Scratch) -> Result<(), String> {
    let mut rows = Vec::new();
    let mut verdicts = Vec::new();
    for run in &RUNS {
        let mut first: Option<(Engine, Outcome)> = None;
        for &engine in &args.engines {
            let mut outcomes = Vec::new();
            for _ in 0..args.repeat {
                let outcome = execute(&scratch.binary(), &scratch.dir, run, engine, None)?;
                outcomes.push(outcome);
            }
            let outcome = median(outcomes, run.name, engine)?;
            if let Some((base_engine, base)) = &first {
                if let Some(diff) = differs(base, &outcome) {
                    return Err(format!(
                        "{}: {} and {} differ: {diff}",
                        run.name,
                        base_engine.name(),
                        engine.name()
                    ));
                }
            } else {
                first = Some((engine, outcome.clone()));
            }
            rows.push(Row {
                run: *run,
                engine,
                outcome,
            });
        }
        let params = first.as_ref().map_or("", |(_, o)| o.params.as_str());
        let names: Vec<&str> = args.engines.iter().map(|e| e.name()).collect();
        let line = if names.len() > 1 || args.repeat > 1 {
            format!(
                "{}: losses identical ({} steps, parameters {params}, {} × {})",
                run.name,
                run.steps,
                names.join(" = "),
                args.repeat,
            )
        } else {
            format!(
                "{}: ran on {} only, once: nothing to compare (parameters {params})",
                run.name, names[0],
            )
        };
        eprintln!("{line}");
        verdicts.push(line);
    }
    if let Some(trace) = &args.trace {
        for (run, path) in traced(trace) {
            execute(
                &scratch.binary(),
                &scratch.dir,
                run,
                Engine::Gpumem,
                Some(&path),
            )?;
            eprintln!(
                "trace of {} on gpumem written to {}",
                run.name,
                path.display()
            );
        }
    }
    let mut text = table::render(&rows);
    text.push('\n');
    for line in verdicts.iter().chain(table::held_more(&rows).iter()) {
        text.push_str(&format!("{line}\n"));
    }
    let out = scratch.dir.join("table.md");
    std::fs::write(&out, &text).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("\nburn-client (Burn {}):\n{text}", scratch::BURN);
    eprintln!("written to {}", out.display());
    Ok(())
}

/// The scenarios on each engine; their tables printed and written.
fn run_scenarios(args: &Args, scratch: &scratch::Scratch) -> Result<(), String> {
    let mut rows = Vec::new();
    for scenario in scenarios::SCENARIOS {
        for &engine in &args.engines {
            let outcome = scenarios::execute(&scratch.binary(), &scratch.dir, scenario, engine)?;
            rows.push((scenario, engine, outcome));
        }
    }
    let text = scenarios::render(&rows);
    let out = scratch.dir.join("scenarios.md");
    std::fs::write(&out, &text).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("\nburn-client scenarios (Burn {}):\n{text}", scratch::BURN);
    eprintln!("written to {}", out.display());
    Ok(())
}

/// The placeholder of `--trace PATH` that records every run.
const RUN_PLACEHOLDER: &str = "{run}";

/// The runs `--trace PATH` records, each with its trace's path: every run,
/// named in place of [`RUN_PLACEHOLDER`], when PATH holds it; else the
/// transformer's training alone, at PATH.
fn traced(path: &Path) -> Vec<(&'static runs::Run, PathBuf)> {
    let text = path.to_string_lossy();
    if text.contains(RUN_PLACEHOLDER) {
        RUNS.iter()
            .map(|run| (run, PathBuf::from(text.replace(RUN_PLACEHOLDER, run.name))))
            .collect()
    } else {
        RUNS.iter()
            .filter(|run| run.name == "lm-train")
            .map(|run| (run, path.to_path_buf()))
            .collect()
    }
}

/// One outcome for `repeat` runs of one run on one engine: every repeat
/// must give the same results (else the engine is not the only thing that
/// changes them) and the same buffer counts; steps per second is the median.
fn median(mut outcomes: Vec<Outcome>, run: &str, engine: Engine) -> Result<Outcome, String> {
    let first = outcomes[0].clone();
    for other in &outcomes[1..] {
        if let Some(diff) = differs(&first, other) {
            return Err(format!(
                "{run} on {} is not deterministic between repeats: {diff}",
                engine.name()
            ));
        }
    }
    outcomes.sort_by(|a, b| a.steps_per_second().total_cmp(&b.steps_per_second()));
    let mid = outcomes.len() / 2;
    let mut outcome = outcomes.swap_remove(mid);
    outcome.peak_bytes = outcomes
        .iter()
        .map(|o| o.peak_bytes)
        .fold(outcome.peak_bytes, u64::max);
    Ok(outcome)
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
