//! The task table.

use crate::ci_steps::Steps;
use crate::publish::Msrv;
use crate::skips::{Skip, run_counting_skips, summary};
use crate::{cargo, nightly_miri_present, run};
use std::process::Command;

/// Every task name, for the usage line.
pub const NAMES: &[&str] = &[
    "ci",
    "test",
    "miri",
    "loom",
    "fault-sweep",
    "soak",
    "fuzz",
    "bench",
    "bench-cubecl",
    "cubecl-client",
    "burn-client",
    "burn-suite",
    "gpu-bundle",
    "gpu-bench",
    "gpu-bundle-standin",
    "html-check",
    "cuda-standin",
    "doc",
    "doc-paths",
    "package",
    "msrv",
    "layout",
];

/// Packages whose tests run under miri: host paths only, no CUDA, no criterion.
/// mem-reliability's lib test runs every fault-sweep scenario once.
const MIRI_PACKAGES: &[&str] = &["mem-storage", "mem-pools", "mem-reliability"];

/// Run one task.
pub fn dispatch(task: &str, args: &[String]) -> Result<(), String> {
    match task {
        "ci" => ci(),
        "test" => test(),
        "miri" => miri(args),
        "loom" => loom(),
        "fault-sweep" => crate::fault_sweep::fault_sweep(args),
        "soak" => crate::soak::soak(args),
        "fuzz" => crate::fuzz::fuzz(args),
        "bench" => crate::bench::bench(args),
        "bench-cubecl" => crate::bench_cubecl::bench_cubecl(args),
        "cubecl-client" => crate::cubecl_client::cubecl_client(args).map(drop),
        "burn-client" => crate::burn_client::burn_client(args).map(drop),
        "burn-suite" => crate::burn_suite::burn_suite(args).map(drop),
        "gpu-bundle" => crate::gpu::gpu_bundle(args),
        "gpu-bench" => crate::gpu::gpu_bench(args),
        "gpu-bundle-standin" => crate::gpu::gpu_bundle_on_standin(args).map(drop),
        "html-check" => crate::html_check::html_check(args).map(drop),
        "cuda-standin" => crate::cuda_standin::cuda_standin(args).map(drop),
        "doc" => crate::publish::doc(args),
        "doc-paths" => crate::doc_paths::doc_paths(args),
        "package" => crate::publish::package(args),
        "msrv" => crate::publish::msrv(args).map(drop),
        "layout" => crate::layout::layout(args),
        other => Err(format!(
            "unknown task `{other}`; tasks: {}",
            NAMES.join(", ")
        )),
    }
}

/// Every test (and the benches once, in test mode), then the doc tests;
/// returns the tests that skipped themselves (see `skips`).
///
/// The examples are built first, as plain programs in the test profile
/// (its dependencies are the tests'): the tests that run them
/// (`examples_output.rs` of mem-storage and gpumem) read
/// `target/debug/examples/NAME`, which `cargo test --all-targets` does not
/// write (it builds each example as a test harness under a hashed name),
/// so on a fresh clone they would skip.
fn run_tests() -> Result<Vec<Skip>, String> {
    run(&mut cargo(&[
        "build",
        "--workspace",
        "--examples",
        "--profile",
        "test",
    ]))?;
    let mut skips =
        run_counting_skips(&mut cargo(&["test", "--workspace", "--all-targets", "--"]))?;
    skips.extend(run_counting_skips(&mut cargo(&[
        "test",
        "--workspace",
        "--doc",
        "--",
    ]))?);
    Ok(skips)
}

/// Prints the last lines of a run: what was skipped and why.
fn print_summary(title: &str, notes: &[String], skips: &[Skip]) {
    eprintln!();
    eprintln!("{title}");
    for note in notes {
        eprintln!("  {note}");
    }
    for line in summary(skips) {
        eprintln!("  {line}");
    }
}

fn test() -> Result<(), String> {
    let skips = run_tests()?;
    print_summary("test summary: every test passed", &[], &skips);
    Ok(())
}

fn ci() -> Result<(), String> {
    let mut steps = Steps::default();
    run(&mut cargo(&["fmt", "--all", "--", "--check"]))?;
    steps.passed("fmt");
    run(&mut cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    steps.passed("clippy");
    // The minimum Rust version first: it is cheap and says early when the
    // compiler is too old for what follows.
    match crate::publish::msrv(&[])? {
        Msrv::Checked(_) => steps.passed("msrv"),
        Msrv::Skipped(why) => steps.skipped("msrv", why),
    }
    let skips = run_tests()?;
    steps.passed("tests (the docs' commands included)");
    // Every fault position of every scenario and corpus program: the tests
    // above try only some, and a violation at one position hides there.
    crate::fault_sweep::fault_sweep_in_ci()?;
    steps.passed("fault sweep (every k, both modes, 0 violations)");
    // Every CUDA test and example on the stand-in driver: the CUDA path
    // runs on every machine, violations fatal, none skipped.
    let standin = crate::cuda_standin::cuda_standin(&[])?;
    steps.passed("CUDA on the stand-in driver");
    steps.note(format!("CUDA on the stand-in driver: {standin}"));
    // The GPU bundle's script, gpu-bench and bench-quick on the same
    // stand-in, small: the first GPU run executes nothing that never ran.
    let bundle = crate::gpu::gpu_bundle_on_standin(&[])?;
    steps.passed("GPU bundle on the stand-in driver");
    steps.note(format!("GPU bundle on the stand-in driver: {bundle}"));
    // The loom models: cheap (small crates in release), and the only proof
    // that no interleaving breaks the ledger, the handle cells or the peaks.
    loom()?;
    steps.passed("loom");
    crate::publish::doc(&[])?;
    steps.passed("docs (-D warnings)");
    crate::doc_paths::doc_paths(&[])?;
    steps.passed("doc paths (every file the prose names exists)");
    crate::publish::package(&[])?;
    steps.passed("package");
    // The HTML report in a real browser (skips, saying why, without Chromium).
    match crate::html_check::html_check(&[])? {
        Some(why) => {
            let why = why.strip_prefix("skipping html-check: ").unwrap_or(&why);
            steps.skipped("HTML check", why);
        }
        None => steps.passed("HTML check"),
    }
    // CubeCL's own suites on its wgpu runtime over lavapipe, with the main
    // memory on CubeCL's engine and on gpumem's (skips, saying why, without
    // Vulkan).
    match crate::cubecl_client::cubecl_client(&[])? {
        Some(why) => {
            let why = why.strip_prefix("skipping cubecl-client: ").unwrap_or(&why);
            steps.skipped("CubeCL's suites on lavapipe", why);
        }
        None => steps.passed("CubeCL's suites on lavapipe (both engines)"),
    }
    // Burn training and inference on lavapipe, once per engine, losses
    // compared bit for bit (skips, saying why, without Vulkan or disk).
    match crate::burn_client::burn_client(&[])? {
        Some(why) => {
            let why = why.strip_prefix("skipping burn-client: ").unwrap_or(&why);
            steps.skipped("Burn on lavapipe", why);
        }
        None => steps.passed("Burn on lavapipe (both engines, losses identical)"),
    }
    if nightly_miri_present() {
        miri(&[])?;
        steps.passed("miri");
    } else {
        let why = "no nightly toolchain with miri on this machine";
        eprintln!("skipping miri: {why}");
        steps.skipped("miri", why);
    }
    // Enforced: no file over 300 lines, no import circle in any crate.
    crate::layout::layout(&["--deny".to_string()])?;
    steps.passed("layout (no file over 300 lines, no import circle)");
    print_summary(&steps.title(), &steps.notes(), &skips);
    Ok(())
}

fn miri(_args: &[String]) -> Result<(), String> {
    if !nightly_miri_present() {
        return Err("miri needs a nightly toolchain with the miri component".into());
    }
    // The lib tests of each package, then the reliability races (the drop
    // queue and the shared ledgers under miri's data-race detector).
    let targets = MIRI_PACKAGES
        .iter()
        .map(|p| [*p, "--lib"])
        .chain([["mem-reliability", "--test=concurrency"]]);
    for [package, target] in targets {
        let mut cmd = Command::new("cargo");
        cmd.args(["+nightly", "miri", "test", "-p", package, target])
            .env_remove("RUSTUP_TOOLCHAIN")
            .env("MIRIFLAGS", "-Zmiri-disable-isolation")
            .env("PROPTEST_CASES", "4")
            .env("CARGO_TARGET_DIR", "target/miri");
        run(&mut cmd)?;
    }
    Ok(())
}

/// The loom models: the budget ledger (mem-budget), the handle cells and
/// drop queue (mem-pools) and the device's
/// lock-free peaks (gpumem's `device_stats`).
fn loom() -> Result<(), String> {
    for package in ["mem-budget", "mem-pools", "gpumem"] {
        let mut cmd = cargo(&["test", "-p", package, "--release", "--lib", "loom"]);
        cmd.env("RUSTFLAGS", "--cfg loom")
            .env("CARGO_TARGET_DIR", "target/loom");
        run(&mut cmd)?;
    }
    Ok(())
}
