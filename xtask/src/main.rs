//! `cargo xtask <task>`: the project's automation, in plain Rust (no deps).
//!
//! Tasks:
//! - `ci` — what CI runs: fmt --check, clippy -D warnings, tests (the docs'
//!   commands among them: gpumem-cli's `tests/docs.rs`), bench targets in
//!   test mode, the loom models, the API docs with warnings denied, the
//!   crates packaged as they would publish, the minimum Rust version, the
//!   layout check (`layout --deny`), the HTML check, and miri on the
//!   host paths when a nightly with miri is present. Its last lines say
//!   which steps passed, which skipped and why, and how many tests skipped
//!   themselves (GPU tests without a CUDA driver), grouped by reason
//!   (`skips.rs`); `test` ends the same way.
//! - `doc` — `cargo doc --no-deps --workspace` with warnings denied.
//! - `doc-paths` — every file name and relative link in docs/*.md, README.md
//!   and CONTRIBUTING.md, and every file name in the comments of the `.rs`
//!   files, reaches a file (`doc_paths.rs`); `ci` runs it.
//! - `package` — `cargo package` of every publishable crate, lowest layer
//!   first (`publish.rs`).
//! - `msrv` — the declared `rust-version` against the compiler in use.
//! - `layout [--deny]` — files over 300 lines of code (blank and comment
//!   lines not counted), and import circles between a crate's top-level
//!   modules and between the files of one (`layout.rs`); `--deny` fails on
//!   any.
//! - `miri`   — miri over the host paths (needs nightly with miri).
//! - `loom`   — the ledger's loom model (`RUSTFLAGS=--cfg loom`).
//! - `fault-sweep` — every reliability scenario with each device call failed.
//! - `soak [--secs N] [--seed S]` — the facade's multi-threaded stress test
//!   (`crates/gpumem/tests/stress.rs`) in release for N s (default 600);
//!   `ci` runs it for 20 s through `cargo test`.
//! - `fuzz --seconds N` — the cargo-fuzz program target (nightly + cargo-fuzz).
//! - `bench [--full]` — the quick benchmark table, or every criterion target.
//! - `bench-cubecl [--runs N]` — gpumem beside CubeCL's engine (cubecl-server
//!   0.11.3 and 0.12.0-pre.1) on every workload and recorded trace; builds
//!   `benches/cubecl-peers`, which is outside the workspace and CI.
//! - `cubecl-client [--engine cubecl|gpumem|both]` — CubeCL's own test
//!   suites (cubecl-core's exported tests, cubecl-wgpu's integration tests,
//!   cubecl-server's unit tests) on CubeCL's wgpu runtime over Vulkan
//!   (lavapipe on a CPU-only machine), its main memory on CubeCL's engine
//!   and on gpumem's (`gpumem-cubecl`), side by side: tests, peak bytes in
//!   wgpu buffers, buffers created, wall time (`cubecl_client/`); `ci` runs
//!   it, and it skips with a reason without Vulkan.
//! - `burn-client [--engine cubecl|gpumem|both] [--repeat N] [--trace PATH]
//!   [--part runs|scenarios|all]` — Burn models (a CNN, a transformer LM
//!   trained on varying shapes, its inference, an LSTM trained on varying
//!   lengths) on the same wgpu runtime, once per engine from one build:
//!   losses bit-identical between engines, peak bytes, buffers, steps/s
//!   (`burn_client/`); then the memory scenarios users reported, reserved
//!   ÷ in use per point on both engines; `--trace PATH` records the
//!   transformer's training on gpumem, every run where PATH holds `{run}`;
//!   skips with a reason without Vulkan. `ci` runs it after
//!   `cubecl-client`.
//! - `burn-suite [--engine cubecl|gpumem|both] [--only NAME…] [--burn-src
//!   PATH]` — Burn's own backend test suite, copied from a Burn checkout at
//!   run time, on the same runtime and build as `burn-client`, per binary
//!   and engine; fails when a test passes on CubeCL's engine and not on
//!   gpumem's (`burn_suite/`); skips with a reason without the checkout or
//!   Vulkan.
//! - `gpu-bundle [--smoke]` — release test and bench binaries + `run.sh` in
//!   `./gpu-bundle` (`--smoke`: the small bundle of the stand-in run).
//! - `gpu-bench [--quick|--smoke]` — the CUDA measurements (skips with a
//!   reason without a GPU).
//! - `gpu-bundle-standin` — the smoke bundle built and its script run on
//!   the stand-in CUDA driver, results checked (`gpu/on_standin.rs`); `ci`
//!   runs it after `cuda-standin`. Its timings are the stand-in's.
//! - `cuda-standin` — every CUDA test and example on the stand-in CUDA
//!   driver (`crates/cuda-standin`, loaded as libcuda from
//!   `target/cuda-standin`), violations fatal, no test skipped
//!   (`cuda_standin.rs`); `ci` runs it.
//! - `html-check` — `replay --html` pages opened in headless Chromium: the
//!   chart renders and a selected point lists live allocations (skips with
//!   a reason without Chromium); `ci` runs it.
//!
//! `tasks.rs` holds the table; the larger tasks live in modules of their own.

use std::process::{Command, ExitCode};

mod bench;
mod bench_cubecl;
mod burn_client;
mod burn_suite;
mod ci_steps;
mod cubecl_client;
mod cuda_standin;
mod disk;
mod doc_paths;
mod fault_sweep;
mod fuzz;
mod gpu;
mod html_check;
mod layout;
mod publish;
mod skips;
mod soak;
mod tasks;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(task) = args.first() else {
        eprintln!("usage: cargo xtask <{}>", tasks::NAMES.join("|"));
        return ExitCode::from(2);
    };
    match tasks::dispatch(task, &args[1..]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask {task}: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Run a command, echoing it, and fail if it fails.
pub(crate) fn run(cmd: &mut Command) -> Result<(), String> {
    eprintln!("$ {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("could not start {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

/// `cargo` with the given arguments.
pub(crate) fn cargo(args: &[&str]) -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args(args);
    cmd
}

/// Whether `cargo +nightly miri` can run here.
pub(crate) fn nightly_miri_present() -> bool {
    Command::new("cargo")
        .args(["+nightly", "miri", "--version"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}
