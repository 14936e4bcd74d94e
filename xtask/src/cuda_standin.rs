//! `cargo xtask cuda-standin`: every CUDA test and example of the
//! workspace on the stand-in CUDA driver (`crates/cuda-standin`).
//!
//! Builds the stand-in, copies it to `target/cuda-standin/` (under
//! `CARGO_TARGET_DIR` when set) as
//! `libcuda.so`, `libcuda.so.1` and `libnvrtc.so` (the names cudarc's
//! loader tries first), and runs with that folder first on
//! `LD_LIBRARY_PATH`:
//! - the tests that need a driver (listed in [`TESTS`]), under
//!   `GPUMEM_STANDIN_ABORT=1`, so any contract violation aborts the run;
//! - the paged stress run again on a device without memory pools
//!   (`GPUMEM_STANDIN_MEMORY_POOLS=0`: synchronous allocation);
//! - the two-device tests of gpumem (`tests/peers.rs`: peer grants, copies
//!   between devices) on two devices (`GPUMEM_STANDIN_DEVICES=2`), under
//!   the abort switch;
//! - the stand-in's seeded faults (`crates/cuda-standin/tests/`), which
//!   commit violations on purpose and check each is caught, on two devices
//!   (`GPUMEM_STANDIN_DEVICES=2`, for the peer-access faults);
//! - the CUDA examples ([`EXAMPLES`]).
//!
//! A test that says it skipped fails the step: on the stand-in every one
//! of them must run. The last line reads "N passed, 0 failed, 0 skipped".
//! The tests that only make sense without a driver ("… without a driver")
//! are left to the normal test step, where no libcuda is on the path.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cargo;
use crate::skips::run_scanned;

/// (package, test target, exact test names): the tests that need a driver.
const TESTS: &[(&str, &str, &[&str])] = &[
    (
        "mem-storage",
        "conformance",
        &[
            "cuda_memory_conforms_in_the_mode_the_device_prefers",
            "cuda_memory_conforms_with_synchronous_and_stream_ordered_allocation",
            "cuda_copies_on_a_second_stream_are_ordered_by_events",
            "the_driver_pool_counts_stream_ordered_memory_and_trims_when_asked",
            "a_missing_driver_or_device_is_no_device_never_a_panic",
        ],
    ),
    (
        "mem-storage",
        "virtual_memory",
        &["cuda::cuda_virtual_memory_passes_the_suite_and_keeps_bytes_across_remaps"],
    ),
    ("mem-capture", "cuda", &[]),
    ("mem-relocate", "cuda", &[]),
    (
        "mem-budget",
        "cuda",
        &["cuda_allocations_round_trip_bytes_and_respect_both_budgets"],
    ),
    (
        "gpumem",
        "adoption",
        &[
            "a_runtime_brings_its_own_cuda_context_and_streams",
            "a_cuda_graph_capture_of_the_legacy_default_stream_is_refused_and_changes_nothing",
            "a_host_transfer_on_a_stream_a_cuda_graph_captures_is_refused_and_the_capture_survives",
        ],
    ),
    (
        "gpumem",
        "device",
        &["cuda_is_a_typed_error_where_the_driver_is_missing"],
    ),
    (
        "gpumem",
        "stress",
        &[
            "four_threads_on_four_streams_of_cuda_arenas_never_reuse_memory_under_unfinished_work",
            "four_threads_on_four_streams_of_cuda_paged_pools_never_reuse_memory_under_unfinished_work",
        ],
    ),
    (
        "gpumem",
        "sharing",
        &[
            "cuda::a_second_process_imports_a_cuda_shareable_buffer_and_the_exporter_sees_its_reply",
            "cuda::a_cuda_import_of_a_descriptor_never_exported_is_a_typed_error_and_nothing_is_mapped",
        ],
    ),
    ("gpumem", "driver_parity", &[]),
    ("gpumem-replay", "driver_parity", &[]),
];

/// Run again on a device without memory pools (`cuMemAlloc` / `cuMemFree`
/// pages, each free a device-wide wait).
const WITHOUT_POOLS: (&str, &str, &[&str]) = (
    "gpumem",
    "stress",
    &["four_threads_on_four_streams_of_cuda_paged_pools_never_reuse_memory_under_unfinished_work"],
);

/// Two devices in one process: peer grants and copies between devices,
/// under the abort switch (the tests announce the violations they commit).
const PEERS: (&str, &str, &[&str]) = ("gpumem", "peers", &[]);

/// The stand-in's own tests: seeded faults, run without the abort switch,
/// on two devices.
const FAULTS: (&str, &str) = ("cuda-standin", "faults");
const FAULT_DEVICES: (&str, &str) = ("GPUMEM_STANDIN_DEVICES", "2");

/// (package, example): run, and must not say it skipped.
const EXAMPLES: &[(&str, &str)] = &[("gpumem", "cudarc_runtime")];

/// Cargo's target folder: `CARGO_TARGET_DIR` when set, else `target`.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from)
}

/// Builds the stand-in and puts it where the loader finds it; returns
/// the folder.
pub(crate) fn install() -> Result<PathBuf, String> {
    // The test profile, as `cargo test` builds (nothing is built twice in
    // `ci`, whose test step came first).
    crate::run(&mut cargo(&[
        "build",
        "--profile",
        "test",
        "-p",
        "cuda-standin",
    ]))?;
    let built = target_dir().join("debug/libgpumem_cuda_standin.so");
    // Where the loader finds it.
    let dir = target_dir().join("cuda-standin");
    let shown = dir.display();
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {shown}: {e}"))?;
    for name in ["libcuda.so", "libcuda.so.1", "libnvrtc.so"] {
        std::fs::copy(&built, dir.join(name))
            .map_err(|e| format!("copying {} to {shown}/{name}: {e}", built.display()))?;
    }
    std::fs::canonicalize(&dir).map_err(|e| format!("{shown}: {e}"))
}

/// Puts the stand-in folder `dir` first on `cmd`'s loader path;
/// contract violations abort under `abort`.
pub(crate) fn on_standin(cmd: &mut Command, dir: &Path, abort: bool) {
    let path = match std::env::var("LD_LIBRARY_PATH") {
        Ok(old) if !old.is_empty() => format!("{}:{old}", dir.display()),
        _ => dir.display().to_string(),
    };
    cmd.env("LD_LIBRARY_PATH", path);
    if abort {
        cmd.env("GPUMEM_STANDIN_ABORT", "1");
    } else {
        cmd.env_remove("GPUMEM_STANDIN_ABORT");
    }
}

/// What one `cargo test` found: passed, and the tests that skipped.
fn test(
    dir: &Path,
    package: &str,
    target: &str,
    names: &[&str],
    abort: bool,
) -> Result<(u64, Vec<String>), String> {
    test_with(dir, (package, target, names), abort, &[])
}

/// As [`test()`], with `env` set for the run.
fn test_with(
    dir: &Path,
    (package, target, names): (&str, &str, &[&str]),
    abort: bool,
    env: &[(&str, &str)],
) -> Result<(u64, Vec<String>), String> {
    let mut cmd = cargo(&["test", "-p", package, "--test", target, "--"]);
    cmd.envs(env.iter().copied());
    cmd.args(names);
    if !names.is_empty() {
        cmd.arg("--exact");
    }
    on_standin(&mut cmd, dir, abort);
    // The stress run's length on CUDA (its default is 20 s).
    cmd.env("GPUMEM_STRESS_SECS", "8");
    let scan = run_scanned(&mut cmd)?;
    let skipped = scan
        .skips
        .iter()
        .map(|s| format!("{package}/{target}: {} ({})", s.test, s.reason));
    Ok((scan.passed, skipped.collect()))
}

/// Runs the step; `Ok(summary line)`.
pub fn cuda_standin(_args: &[String]) -> Result<String, String> {
    let dir = install()?;
    let (mut passed, mut skipped) = (0, Vec::new());
    for (package, target, names) in TESTS {
        let (p, s) = test(&dir, package, target, names, true)?;
        passed += p;
        skipped.extend(s);
    }
    let no_pools = [("GPUMEM_STANDIN_MEMORY_POOLS", "0")];
    let (p, s) = test_with(&dir, WITHOUT_POOLS, true, &no_pools)?;
    passed += p;
    skipped.extend(s);
    let (p, s) = test_with(&dir, PEERS, true, &[FAULT_DEVICES])?;
    passed += p;
    skipped.extend(s);
    let (p, s) = test_with(&dir, (FAULTS.0, FAULTS.1, &[]), false, &[FAULT_DEVICES])?;
    passed += p;
    skipped.extend(s);
    for (package, example) in EXAMPLES {
        let build = [
            "build",
            "--profile",
            "test",
            "-p",
            package,
            "--example",
            example,
        ];
        crate::run(&mut cargo(&build))?;
        let mut cmd = Command::new(target_dir().join("debug/examples").join(example));
        on_standin(&mut cmd, &dir, true);
        eprintln!("$ {cmd:?}");
        let out = cmd
            .output()
            .map_err(|e| format!("running {example}: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        print!("{stdout}");
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
        if !out.status.success() {
            return Err(format!("example {example} failed with {}", out.status));
        }
        match stdout.lines().find(|l| l.starts_with("skipping")) {
            Some(line) => skipped.push(format!("example {example}: {line}")),
            None => passed += 1,
        }
    }
    let summary = format!("{passed} passed, 0 failed, {} skipped", skipped.len());
    if !skipped.is_empty() {
        return Err(format!(
            "{summary}: on the stand-in every CUDA test must run:\n  {}",
            skipped.join("\n  ")
        ));
    }
    eprintln!("cuda-standin: {summary}");
    Ok(summary)
}
