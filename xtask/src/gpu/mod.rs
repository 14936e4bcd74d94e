//! `cargo xtask gpu-bundle` and `cargo xtask gpu-bench`: GPU runs.
//!
//! - `gpu-bench [ARGS…]`: the `gpu-bench` binary of `gpumem-benches` in
//!   release; on a machine without CUDA it prints why it skips and exits 0.
//! - `gpu-bundle [--exclude CRATE …]`: builds, here, every release test binary of the
//!   workspace, the criterion bench binaries and the `gpu-bench` and
//!   `bench-quick` binaries, and copies them into `./gpu-bundle/` (ignored
//!   by git) with a `run.sh` that prints the driver and device
//!   (`nvidia-smi`) and runs everything, so a GPU machine needs no
//!   toolchain: copy the folder, run `./gpu-bundle/run.sh` from the
//!   repository root (some tests read files next to their crate).
//!
//! Executables are found from cargo's own JSON messages
//! (`--message-format=json`, the `executable` field), not by guessing
//! paths under `target/`. No JSON library: xtask stays dependency-free and
//! only reads that one string field.

use std::fs;
use std::path::Path;
use std::process::Stdio;

use crate::{cargo, run};

mod artifacts;
mod run_script;

use artifacts::{Artifact, Keep, executables};
use run_script::run_script;

/// Where the bundle goes (listed in `.gitignore`).
const BUNDLE: &str = "gpu-bundle";

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

/// Builds the bundle into `./gpu-bundle`. Extra arguments go to the test
/// and bench builds (e.g. `--exclude some-crate` while it does not build).
pub fn gpu_bundle(args: &[String]) -> Result<(), String> {
    // Diagnostics rendered to stderr as usual; only artifacts come as JSON.
    let json = "--message-format=json-render-diagnostics";
    let extra: Vec<&str> = args.iter().map(String::as_str).collect();
    let with = |base: &[&'static str]| -> Vec<&str> {
        base.iter().copied().chain(extra.iter().copied()).collect()
    };
    let test = ["test", "--workspace", "--release", "--no-run", json];
    let tests = build(&with(&test), Keep::Tests)?;
    let bench = ["bench", "--workspace", "--no-run", json];
    let benches = build(&with(&bench), Keep::Benches)?;
    let bins = build(
        &[
            "build",
            "--release",
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
    let root = Path::new(BUNDLE);
    if root.exists() {
        fs::remove_dir_all(root).map_err(|e| format!("clearing {BUNDLE}: {e}"))?;
    }
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
    eprintln!(
        "{BUNDLE}/: {} test binaries, {} bench binaries, gpu-bench, bench-quick; run {BUNDLE}/run.sh on the GPU machine",
        tests.len(),
        benches.len()
    );
    Ok(())
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
