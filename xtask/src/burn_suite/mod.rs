//! `cargo xtask burn-suite [--engine cubecl|gpumem|both] [--only NAME…]
//! [--burn-src PATH]`: Burn's own backend test suite
//! (`crates/burn-backend-tests` of the Burn repository, not on crates.io)
//! on CubeCL's wgpu runtime over Vulkan (lavapipe on a CPU-only machine),
//! the runtime's main memory on CubeCL's engine and on gpumem's.
//!
//! The suite's files come from a Burn checkout at run time (`--burn-src`,
//! else `GPUMEM_BURN_SRC`, else `target/burn-src`); Burn's code stays out
//! of this repository. `scratch.rs` writes them into a crate under
//! `target/burn-suite/` with our patch and manifest, built against the
//! published Burn 0.23.0-pre.1 crates and burn-client's runtime-selectable
//! cubecl-wgpu, in burn-client's target dir: one build serves both engines.
//! Each test binary (`tests/NAME.rs`; `--only NAME` picks some) runs once
//! per engine on one test thread (`run.rs`), and the table says per binary
//! and engine what passed, failed and was skipped, with reasons, as
//! cubecl-client's does. The oracle (`oracle.rs`): every test that passes
//! on CubeCL's engine passes on gpumem's, and memory_cleaning and
//! graph_capture pass on gpumem; else the task fails. Skips, saying why,
//! without the Burn checkout, without Vulkan, with too little disk, or with
//! `GPUMEM_SKIP_BURN_SUITE` set.

use std::path::{Path, PathBuf};

mod oracle;
mod run;
mod scratch;

use crate::cubecl_client::engine::Engine;
use crate::cubecl_client::{table, vulkan};

/// Set, it makes the task skip.
const SKIP_VAR: &str = "GPUMEM_SKIP_BURN_SUITE";

/// Where the Burn checkout is when `--burn-src` does not say.
const SRC_VAR: &str = "GPUMEM_BURN_SRC";

/// The Burn commit whose suite the patch was written against.
pub const BURN_COMMIT: &str = "2c06be351006851d42fdb6df16b976f4a82d9747";

/// Free disk a cold build needs on top of burn-client's, and a warm one.
const COLD_BUILD_BYTES: u64 = 8 << 30;
const WARM_BUILD_BYTES: u64 = 2 << 30;

/// A test left out on purpose with `--skip`, on both engines.
#[derive(Debug, Clone, Copy)]
pub struct Left {
    /// The binary.
    pub suite: &'static str,
    /// The `--skip` filter.
    pub test: &'static str,
    /// Why.
    pub reason: &'static str,
}

/// The tests left out: none yet.
pub const LEFT_OUT: &[Left] = &[];

struct Args {
    engines: Vec<Engine>,
    only: Vec<String>,
    burn_src: Option<PathBuf>,
}

const USAGE: &str = "usage: cargo xtask burn-suite [--engine cubecl|gpumem|both] \
                     [--only NAME…] [--burn-src PATH]";

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args {
        engines: vec![Engine::Cubecl, Engine::Gpumem],
        only: Vec::new(),
        burn_src: None,
    };
    let mut args = args.iter().peekable();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--engine" => parsed.engines = Engine::parse(args.next().ok_or(USAGE)?)?,
            "--burn-src" => parsed.burn_src = Some(PathBuf::from(args.next().ok_or(USAGE)?)),
            "--only" => {
                while let Some(name) = args.next_if(|a| !a.starts_with("--")) {
                    parsed.only.push(name.clone());
                }
                if parsed.only.is_empty() {
                    return Err(format!("{USAGE}; --only needs a binary's name"));
                }
            }
            _ => return Err(format!("{USAGE}; got {arg:?}")),
        }
    }
    Ok(parsed)
}

/// The Burn checkout: `--burn-src`, else [`SRC_VAR`], else `target/burn-src`.
fn burn_src(root: &Path, given: Option<PathBuf>) -> PathBuf {
    given
        .or_else(|| std::env::var_os(SRC_VAR).map(PathBuf::from))
        .unwrap_or_else(|| root.join("target/burn-src"))
}

/// The binaries to run, in order: the memory suites first, then the rest.
fn order(mut all: Vec<String>, only: &[String]) -> Result<Vec<String>, String> {
    if let Some(unknown) = only.iter().find(|n| !all.contains(n)) {
        return Err(format!(
            "--only {unknown}: the suite has {}",
            all.join(", ")
        ));
    }
    all.retain(|n| only.is_empty() || only.contains(n));
    all.sort_by_key(|n| (!oracle::MUST_PASS.contains(&n.as_str()), n.clone()));
    Ok(all)
}

/// Runs the task; `Ok(Some(reason))` when it skipped.
pub fn burn_suite(args: &[String]) -> Result<Option<String>, String> {
    let args = parse_args(args)?;
    let skip = |why: String| {
        let why = format!("skipping burn-suite: {why}");
        eprintln!("{why}");
        Ok(Some(why))
    };
    if std::env::var_os(SKIP_VAR).is_some() {
        return skip(format!("{SKIP_VAR} is set"));
    }
    let root = crate::burn_client::root();
    let src = burn_src(&root, args.burn_src);
    if !src.join(scratch::SUITE_DIR).join("tests").is_dir() {
        return skip(format!(
            "no Burn checkout at {} (it needs {}/tests); get one with `git clone \
             https://github.com/tracel-ai/burn {}` and `git -C {} checkout {BURN_COMMIT}`, or \
             name one with --burn-src PATH or {SRC_VAR} (docs/burn.md)",
            src.display(),
            scratch::SUITE_DIR,
            src.display(),
            src.display(),
        ));
    }
    if let Some(why) = vulkan::missing() {
        return skip(why);
    }
    let target = root.join("target");
    let built = target.join("burn-suite/built");
    let need = (COLD_BUILD_BYTES, WARM_BUILD_BYTES);
    if let Some(why) = crate::disk::short_of(&target, &built, "Burn's suite", need) {
        return skip(why);
    }
    let adapter = root.join("crates/gpumem-cubecl");
    let commit = scratch::commit(&src).unwrap_or_else(|| "not a git work tree".into());
    eprintln!(
        "burn-suite: Burn's suite from {} (commit: {commit})",
        src.display()
    );
    eprintln!("burn-suite: Vulkan devices: {:?}", vulkan::devices());
    let scratch = scratch::prepare(&root, &adapter, &src)?;
    let names = order(scratch.binaries()?, &args.only)?;
    let binaries = run::build(&scratch, &names)?;
    crate::cubecl_client::scratch::write(&built, "")?;
    if !run::warm_up(&scratch, &binaries)? {
        eprintln!(
            "burn-suite: {} not built, CubeCL's store not filled first: on a machine where \
             CubeCL never ran, the first run's peak holds its 256 MiB throughput probe",
            run::WARMS
        );
    }
    let mut rows = Vec::new();
    for name in &names {
        let exe = binaries
            .get(name)
            .ok_or_else(|| format!("the build made no test binary named {name}"))?;
        let skips: Vec<&str> = LEFT_OUT
            .iter()
            .filter(|l| l.suite == name)
            .map(|l| l.test)
            .collect();
        for &engine in &args.engines {
            rows.push(run::run(&scratch, name, exe, engine, &skips)?);
        }
    }
    let verdict = oracle::judge(&rows);
    let mut text = table::render(&rows);
    for line in verdict.lines().iter().chain(table::held_more(&rows).iter()) {
        text.push_str(&format!("\n{line}\n"));
    }
    let out = scratch.dir.join("table.md");
    std::fs::write(&out, &text).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!(
        "\nburn-suite (Burn {}, suite at {commit}):\n{text}",
        crate::burn_client::scratch::BURN
    );
    eprintln!("written to {}", out.display());
    if verdict.against_gpumem.is_empty() {
        Ok(None)
    } else {
        Err(format!(
            "the oracle failed: {}",
            verdict.against_gpumem.join("; ")
        ))
    }
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
