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
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::{cargo, run};

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

/// One executable cargo built, and a file name for it in the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Artifact {
    path: PathBuf,
    name: String,
}

/// The value of the first `"key":"…"` string field in `line`, unescaped
/// for the escapes cargo emits in paths (`\\` and `\"`).
fn string_field(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let mut out = String::new();
    let mut chars = line[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => out.push(chars.next()?),
            c => out.push(c),
        }
    }
    None
}

/// What to keep of the executables a build produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Test harnesses (`profile.test`): unit and integration tests, not the
    /// plain binaries and examples `cargo test` also builds.
    Tests,
    /// Bench targets only (`target.kind == ["bench"]`).
    Benches,
    /// Everything.
    All,
}

/// Whether the artifact `line` describes is one `keep` wants.
fn wanted(line: &str, keep: Keep) -> bool {
    match keep {
        Keep::All => true,
        Keep::Benches => line.contains("\"kind\":[\"bench\"]"),
        Keep::Tests => line
            .find("\"profile\":{")
            .and_then(|at| {
                let rest = &line[at..];
                rest.find('}')
                    .map(|end| rest[..end].contains("\"test\":true"))
            })
            .unwrap_or(false),
    }
}

/// Executables named by cargo's JSON messages in `stdout`.
fn executables(stdout: &str, keep: Keep) -> Vec<Artifact> {
    stdout
        .lines()
        .filter(|l| l.contains("\"reason\":\"compiler-artifact\""))
        .filter(|l| wanted(l, keep))
        .filter_map(|line| {
            let path = PathBuf::from(string_field(line, "executable")?);
            let package = string_field(line, "manifest_path")
                .and_then(|m| {
                    Path::new(&m)
                        .parent()?
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                })
                .unwrap_or_else(|| "workspace".into());
            let file = path.file_name()?.to_string_lossy().into_owned();
            Some(Artifact {
                name: format!("{package}__{file}"),
                path,
            })
        })
        .collect()
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

/// The bundle's `run.sh`: device first, then every test binary (each one's
/// result recorded, a failure does not stop the rest), then gpu-bench; with
/// `--benches` also the criterion targets with short timings.
fn run_script() -> String {
    r#"#!/usr/bin/env bash
# Built by `cargo xtask gpu-bundle`. Run from the repository root:
#   gpu-bundle/run.sh            tests + gpu-bench
#   gpu-bundle/run.sh --benches  ... + criterion benches (short timings) + bench-quick
# Logs go to gpu-bundle/results/ (or $OUT/results when $OUT is set).
set -u
here="$(cd "$(dirname "$0")" && pwd)"
results="${OUT:-$here}/results"
mkdir -p "$results"
echo "== device"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv | tee "$results/device.csv"
  nvidia-smi | tee "$results/nvidia-smi.txt"
else
  echo "nvidia-smi not found: no NVIDIA driver on this machine" | tee "$results/device.csv"
fi
failed=0
echo "== tests"
for t in "$here"/tests/*; do
  name="$(basename "$t")"
  if "$t" --test-threads=4 >"$results/$name.log" 2>&1; then
    echo "ok     $name ($(grep -c '^test .* ok$' "$results/$name.log") passed)"
  else
    echo "FAILED $name (see results/$name.log)"; tail -n 30 "$results/$name.log"; failed=$((failed + 1))
  fi
done
echo "== gpu-bench"
"$here/bin/gpu-bench" 2>&1 | tee "$results/gpu-bench.txt" || failed=$((failed + 1))
if [ "${1:-}" = "--benches" ]; then
  echo "== bench-quick"
  "$here/bin/bench-quick" 2>&1 | tee "$results/bench-quick.txt" || failed=$((failed + 1))
  echo "== criterion benches"
  for b in "$here"/benches/*; do
    "$b" --bench --warm-up-time 0.5 --measurement-time 1 2>&1 | tee "$results/$(basename "$b").txt" || failed=$((failed + 1))
  done
fi
echo "== done: $failed failed step(s)"
exit $((failed > 0))
"#
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_executables_are_read_from_cargo_json_and_others_skipped() {
        let out = concat!(
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/mem-pools/Cargo.toml","target":{"kind":["lib"],"name":"mem_pools","test":true},"profile":{"opt_level":"3","test":true},"executable":"/w/target/release/deps/mem_pools-1a2b"}"#,
            "\n",
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/mem-pools/Cargo.toml","target":{"kind":["lib"],"name":"mem_pools","test":true},"profile":{"opt_level":"3","test":false},"executable":null}"#,
            "\n",
            r#"{"reason":"compiler-artifact","manifest_path":"/w/crates/gpumem/Cargo.toml","target":{"kind":["example"],"name":"budget","test":true},"profile":{"opt_level":"3","test":false},"executable":"/w/target/release/examples/budget"}"#,
            "\n",
            r#"{"reason":"build-finished","success":true}"#,
        );
        assert_eq!(executables(out, Keep::All).len(), 2);
        assert!(executables(out, Keep::Benches).is_empty());
        assert_eq!(
            executables(out, Keep::Tests),
            vec![Artifact {
                path: PathBuf::from("/w/target/release/deps/mem_pools-1a2b"),
                name: "mem-pools__mem_pools-1a2b".into(),
            }]
        );
    }

    #[test]
    fn escaped_quotes_and_backslashes_in_paths_are_unescaped() {
        let line = r#"{"executable":"C:\\dir\\a\"b"}"#;
        assert_eq!(
            string_field(line, "executable").as_deref(),
            Some(r#"C:\dir\a"b"#)
        );
        assert_eq!(string_field(line, "missing"), None);
    }
}
