//! `cargo xtask gpu-bundle` and `cargo xtask gpu-bench`: GPU runs.
//!
//! - `gpu-bench [ARGS…]`: the `gpu-bench` binary of `gpumem-benches` in
//!   release; on a machine without CUDA it prints why it skips and exits 0.
//! - `gpu-bundle [--smoke] [--exclude CRATE …]`: builds, here, every release test binary of the
//!   workspace, the criterion bench binaries and the `gpu-bench` and
//!   `bench-quick` binaries, strips them with a `run.sh` that prints the
//!   driver and device (`nvidia-smi`) and runs everything, and packs them
//!   into one archive, `./gpu-bundle/bundle.tar.xz` (refused over 60 MiB:
//!   a GPU machine receives at most 64), beside a `run.sh` that unpacks
//!   it and runs it. A GPU machine needs no toolchain: carry `gpu-bundle`,
//!   run `gpu-bundle/run.sh` from the repository root (some tests read
//!   files next to their crate); `gpu-bundle/run.sh --dry-run` unpacks and
//!   lists every test without running one. `--smoke` builds the small
//!   bundle CI runs on the stand-in driver ([`Kind::Smoke`]).
//! - `gpu-bundle-standin`: the smoke bundle built and its script run on
//!   the stand-in driver, artifacts checked (`on_standin.rs`); `ci` runs
//!   it. Every line a GPU run executes runs there; its timings are the
//!   stand-in's and are not claimed anywhere.
//!
//! Executables are found from cargo's own JSON messages
//! (`--message-format=json`, the `executable` field), not by guessing
//! paths under `target/`. No JSON library: xtask stays dependency-free and
//! only reads that one string field.

use std::fs;
use std::path::Path;
use std::process::Stdio;

use crate::{cargo, run};

mod archive;
mod artifacts;
mod on_standin;
mod run_script;

pub use on_standin::gpu_bundle_on_standin;

use artifacts::{Artifact, Keep, executables};
use run_script::run_script;

/// Where the bundle goes (listed in `.gitignore`): the archive and the
/// `run.sh` that unpacks it.
const BUNDLE: &str = "gpu-bundle";

/// Where the binaries are gathered before packing (under `target/`).
const STAGING: &str = "target/gpu-bundle-staging";

/// Runs the GPU benchmark binary.
pub fn gpu_bench(args: &[String]) -> Result<(), String> {
    let mut cmd = cargo(&[
        "run",
        "--release",
        "-p",
        "gpumem-benches",
        "--bin",
        "gpu-bench",
        "--",
    ]);
    cmd.args(args);
    run(&mut cmd)
}

/// Builds with `args` (which must ask for JSON messages) and returns the
/// executables built.
fn build(args: &[&str], keep: Keep) -> Result<Vec<Artifact>, String> {
    let mut cmd = cargo(args);
    eprintln!("$ {cmd:?}");
    let output = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not start {cmd:?}: {e}"))?;
    if !output.status.success() {
        return Err(format!("{cmd:?} failed with {}", output.status));
    }
    Ok(executables(&String::from_utf8_lossy(&output.stdout), keep))
}

fn copy_into(dir: &Path, artifacts: &[Artifact]) -> Result<Vec<String>, String> {
    fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let mut names = Vec::new();
    for a in artifacts {
        let to = dir.join(&a.name);
        fs::copy(&a.path, &to)
            .map_err(|e| format!("copying {} to {}: {e}", a.path.display(), to.display()))?;
        names.push(a.name.clone());
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// What goes into a bundle and how it is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// For a GPU machine: every test binary of the workspace and the
    /// criterion benches in release, packed at `xz -6`.
    Release,
    /// For the stand-in driver in CI ([`SMOKE_TESTS`]): a few CUDA test
    /// binaries, the benches and binaries in the test profile (what CI's
    /// test step already built), packed at `xz -1`. The script is the same.
    Smoke,
}

/// (package, test target): the test binaries of a smoke bundle, CUDA
/// tests of four layers that each take seconds on the stand-in.
pub(crate) const SMOKE_TESTS: &[(&str, &str)] = &[
    ("mem-storage", "conformance"),
    ("mem-capture", "cuda"),
    ("gpumem", "adoption"),
    ("gpumem-replay", "driver_parity"),
];

/// Builds the bundle into `./gpu-bundle`: `--smoke` builds the stand-in's
/// ([`Kind::Smoke`]); other arguments go to the test and bench builds
/// (e.g. `--exclude some-crate` while it does not build).
pub fn gpu_bundle(args: &[String]) -> Result<(), String> {
    let smoke = args.iter().any(|a| a == "--smoke");
    let rest: Vec<String> = args.iter().filter(|a| *a != "--smoke").cloned().collect();
    let kind = if smoke { Kind::Smoke } else { Kind::Release };
    build_bundle(kind, &rest).map(drop)
}

/// What [`build_bundle`] put in the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Built {
    /// File names of the test binaries (`bundle/tests/`).
    pub(crate) tests: Vec<String>,
    /// File names of the criterion bench binaries (`bundle/benches/`).
    pub(crate) benches: Vec<String>,
}

/// Builds the bundle of `kind` into `./gpu-bundle`; `args` go to the test
/// and bench builds.
pub(crate) fn build_bundle(kind: Kind, args: &[String]) -> Result<Built, String> {
    // Diagnostics rendered to stderr as usual; only artifacts come as JSON.
    let json = "--message-format=json-render-diagnostics";
    let extra: Vec<&str> = args.iter().map(String::as_str).collect();
    let with = |base: &[&'static str]| -> Vec<&str> {
        base.iter().copied().chain(extra.iter().copied()).collect()
    };
    let (tests, benches, profile) = match kind {
        Kind::Release => {
            let test = ["test", "--workspace", "--release", "--no-run", json];
            let bench = ["bench", "--workspace", "--no-run", json];
            (
                build(&with(&test), Keep::Tests)?,
                build(&with(&bench), Keep::Benches)?,
                "release",
            )
        }
        Kind::Smoke => {
            let mut tests = Vec::new();
            for (package, target) in SMOKE_TESTS {
                let test = ["test", "--no-run", "-p", package, "--test", target, json];
                tests.extend(build(&with(&test), Keep::Tests)?);
            }
            let bench = [
                "test",
                "--no-run",
                "-p",
                "gpumem-benches",
                "--benches",
                json,
            ];
            (tests, build(&with(&bench), Keep::Benches)?, "test")
        }
    };
    let bins = build(
        &[
            "build",
            "--profile",
            profile,
            "-p",
            "gpumem-benches",
            "--bin",
            "gpu-bench",
            "--bin",
            "bench-quick",
            json,
        ],
        Keep::All,
    )?;
    let staging = Path::new(STAGING);
    if staging.exists() {
        fs::remove_dir_all(staging).map_err(|e| format!("clearing {STAGING}: {e}"))?;
    }
    let root = &staging.join("bundle");
    let tests = copy_into(&root.join("tests"), &tests)?;
    let benches = copy_into(&root.join("benches"), &benches)?;
    let bins: Vec<Artifact> = bins
        .into_iter()
        .map(|a| Artifact {
            name: a
                .path
                .file_name()
                .map_or(a.name.clone(), |f| f.to_string_lossy().into_owned()),
            path: a.path,
        })
        .collect();
    copy_into(&root.join("bin"), &bins)?;
    strip_all(root);
    let script = root.join("run.sh");
    fs::write(&script, run_script()).map_err(|e| format!("writing {}: {e}", script.display()))?;
    make_executable(&script)?;
    let out = Path::new(BUNDLE);
    if out.exists() {
        fs::remove_dir_all(out).map_err(|e| format!("clearing {BUNDLE}: {e}"))?;
    }
    fs::create_dir_all(out).map_err(|e| format!("creating {BUNDLE}: {e}"))?;
    let level = match kind {
        Kind::Release => 6,
        Kind::Smoke => 1,
    };
    let bytes = archive::pack(staging, "bundle", &out.join(archive::ARCHIVE), level)?;
    let unpack = out.join("run.sh");
    fs::write(&unpack, archive::unpack_script())
        .map_err(|e| format!("writing {}: {e}", unpack.display()))?;
    make_executable(&unpack)?;
    eprintln!(
        "{BUNDLE}/{}: {:.1} MiB ({} test binaries, {} bench binaries, gpu-bench, bench-quick); \
         carry {BUNDLE} and run {BUNDLE}/run.sh on the GPU machine ({BUNDLE}/run.sh --dry-run \
         checks it here)",
        archive::ARCHIVE,
        bytes as f64 / (1 << 20) as f64,
        tests.len(),
        benches.len()
    );
    Ok(Built { tests, benches })
}

/// Strips symbols when `strip` exists (smaller bundles travel faster);
/// without it the bundle is only larger.
fn strip_all(root: &Path) {
    for dir in ["tests", "benches", "bin"] {
        let Ok(entries) = fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let _ = std::process::Command::new("strip")
                .arg(entry.path())
                .stderr(Stdio::null())
                .status();
        }
    }
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("chmod {}: {e}", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<(), String> {
    Ok(())
}
