//! `cargo xtask cubecl-client [--engine cubecl|gpumem|both]`: CubeCL's own
//! test suites on CubeCL's wgpu runtime, on a real Vulkan driver (lavapipe
//! on a CPU-only machine), with the runtime's main memory on CubeCL's
//! engine and on gpumem's, side by side.
//!
//! It writes a scratch crate under `target/cubecl-client/` (`scratch.rs`)
//! that depends on the pinned CubeCL crates from crates.io and patches
//! cubecl-wgpu with a copy carrying the project's patch
//! (`xtask/cubecl/cubecl-wgpu.patch`): the main memory's type becomes
//! `gpumem_cubecl::MemoryManagement` when the feature `gpumem` is on, and
//! its wgpu buffers are counted (bytes held at peak, buffers created). It
//! builds with `-j 2`, no debug info, into the scratch crate's own target
//! dir, runs every suite (`suites.rs`) once per engine with one test thread
//! (so that peaks do not depend on how tests overlap), and prints the table
//! (`table.rs`), also written to `target/cubecl-client/table.md`. Fails when
//! a test fails; without Vulkan it skips, saying why (`vulkan.rs`), and so
//! it does with `GPUMEM_SKIP_CUBECL_CLIENT` set.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cargo;

mod engine;
mod libtest;
mod scratch;
mod suites;
mod table;
mod vulkan;

use engine::Engine;
use libtest::{Outcome, Unpassed};
use scratch::Scratch;
use suites::Suite;
use table::{Counts, Row};

/// Set, it makes the task skip (a local `cargo xtask ci` without the
/// CubeCL build); CI leaves it unset.
const SKIP_VAR: &str = "GPUMEM_SKIP_CUBECL_CLIENT";

/// The repository root (xtask lives one level below it).
fn root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}

/// Runs the task; `Ok(Some(reason))` when it skipped.
pub fn cubecl_client(args: &[String]) -> Result<Option<String>, String> {
    let mut engines = vec![Engine::Cubecl, Engine::Gpumem];
    let mut explicit = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--engine" => {
                let value = args.next().ok_or("--engine needs cubecl, gpumem or both")?;
                engines = Engine::parse(value)?;
                explicit = value != "both";
            }
            other => {
                return Err(format!(
                    "usage: cargo xtask cubecl-client [--engine cubecl|gpumem|both]; got {other:?}"
                ));
            }
        }
    }
    if std::env::var_os(SKIP_VAR).is_some() {
        let why = format!("skipping cubecl-client: {SKIP_VAR} is set");
        eprintln!("{why}");
        return Ok(Some(why));
    }
    if let Some(why) = vulkan::missing() {
        let why = format!("skipping cubecl-client: {why}");
        eprintln!("{why}");
        return Ok(Some(why));
    }
    eprintln!("cubecl-client: Vulkan devices: {:?}", vulkan::devices());
    let scratch = scratch::prepare(&root())?;
    let mut notes = Vec::new();
    if scratch.adapter.is_none() {
        let why = "the gpumem engine: crates/gpumem-cubecl is not in this tree";
        if explicit && engines == [Engine::Gpumem] {
            return Err(why.to_string());
        }
        engines.retain(|e| *e != Engine::Gpumem);
        notes.push(format!("skipped {why}"));
    }
    let mut rows = Vec::new();
    let suites = suites::all();
    for suite in suites.iter().filter(|s| !s.per_engine) {
        rows.push(run_suite(&scratch, suite, None)?);
    }
    for &engine in &engines {
        build(&scratch, engine)?;
        for suite in suites.iter().filter(|s| s.per_engine) {
            rows.push(run_suite(&scratch, suite, Some(engine))?);
        }
    }
    let text = table::render(&rows);
    let out = scratch.dir.join("table.md");
    std::fs::write(&out, &text).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("\ncubecl-client (CubeCL {}):\n{text}", scratch::VERSION);
    for note in &notes {
        eprintln!("{note}");
    }
    eprintln!("written to {}", out.display());
    let red: Vec<String> = rows
        .iter()
        .filter(|r| !r.green())
        .map(|r| format!("{} on {}", r.suite, r.engine))
        .collect();
    if red.is_empty() {
        Ok(None)
    } else {
        Err(format!("tests failed in: {}", red.join(", ")))
    }
}

/// `cargo test` in the scratch crate, built as `-j 2` without debug info.
fn scratch_cargo(scratch: &Scratch, engine: Option<Engine>, tail: &[String]) -> Command {
    let mut cmd = cargo(&["test", "-j", "2", "--manifest-path"]);
    cmd.arg(scratch.manifest())
        .arg("--target-dir")
        .arg(scratch.target())
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .env("CARGO_PROFILE_TEST_DEBUG", "0");
    if let Some(feature) = engine.and_then(Engine::feature) {
        cmd.args(["--features", feature]);
    }
    cmd.args(tail);
    cmd
}

/// Builds every test binary of the scratch crate for `engine`.
fn build(scratch: &Scratch, engine: Engine) -> Result<(), String> {
    let tail = ["--no-run".to_string(), "--tests".to_string()];
    let started = std::time::Instant::now();
    crate::run(&mut scratch_cargo(scratch, Some(engine), &tail))?;
    eprintln!(
        "cubecl-client: built the {} engine's tests in {:.0} s",
        engine.name(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Runs one suite's binary with one test thread and reads its output and
/// the counts the patched runtime wrote.
fn run_suite(scratch: &Scratch, suite: &Suite, engine: Option<Engine>) -> Result<Row, String> {
    let engine_name = engine.map_or("—", Engine::name);
    let counts_file = scratch
        .dir
        .join("counts")
        .join(format!("{engine_name}-{}.txt", suite.select.join("_")));
    if let Some(dir) = counts_file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let _ = std::fs::remove_file(&counts_file);
    let left = suites::skips(suite, engine);
    let mut tail = suite.select.clone();
    tail.extend(["--".into(), "--test-threads=1".into()]);
    if !left.is_empty() {
        tail.push("--exact".into());
    }
    for l in &left {
        tail.extend(["--skip".into(), l.test.into()]);
    }
    let mut cmd = scratch_cargo(scratch, engine, &tail);
    cmd.env("GPUMEM_CUBECL_COUNTS", &counts_file)
        .stdout(Stdio::piped());
    eprintln!("$ {cmd:?}");
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("could not start {cmd:?}: {e}"))?;
    let mut outcome = Outcome::default();
    if let Some(stdout) = child.stdout.take() {
        let mut out = std::io::stdout();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            outcome.line(&line);
            let _ = writeln!(out, "{line}");
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for {cmd:?}: {e}"))?;
    let stopped =
        (!outcome.finished).then(|| format!("no result line; cargo exited with {status}"));
    let counts = std::fs::read_to_string(&counts_file)
        .ok()
        .and_then(|text| Counts::parse(&text));
    Ok(Row {
        suite: suite.name.clone(),
        engine: engine_name.to_string(),
        outcome,
        left_out: left
            .iter()
            .map(|l| Unpassed {
                test: l.test.to_string(),
                reason: Some(l.reason.to_string()),
            })
            .collect(),
        counts,
        stopped,
    })
}
