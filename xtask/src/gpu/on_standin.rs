//! `cargo xtask gpu-bundle-standin`: the GPU bundle's script run where no
//! GPU is, on the stand-in driver (`crates/cuda-standin`), so every line a
//! GPU run executes (the unpacking, the device probe, the test loop,
//! `gpu-bench`, `bench-quick`, the criterion loop) has executed before a
//! GPU is lent.
//!
//! Builds the smoke bundle ([`Kind::Smoke`]), checks it with `run.sh
//! --dry-run`, then runs `run.sh --benches` under `GPU_BUNDLE_SMOKE=1`
//! with the stand-in first on the loader's path and contract violations
//! fatal (`GPUMEM_STANDIN_ABORT=1`). It passes when the script exits 0,
//! says `0 failed`, and left what a GPU run leaves in `results/`: the
//! device file, one log per test binary and per bench binary, the
//! `gpu-bench` report (with its driver cost line) and the `bench-quick`
//! tables. The timings in them are the stand-in's: they are quoted
//! nowhere, and `gpu-bench` says so at the top of its report.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{BUNDLE, Built, Kind, build_bundle};
use crate::cuda_standin::{install, on_standin};

/// Where the bundle unpacks (under `target/`, cleared first).
const UNPACK: &str = "target/gpu-bundle-standin/unpacked";

/// Where the script writes `results/` (its `$OUT`).
const OUT: &str = "target/gpu-bundle-standin/out";

/// Runs `gpu-bundle/run.sh` with `args` on the stand-in in `dir`; returns
/// its stdout (also echoed).
fn run_script(dir: &Path, args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new(Path::new(BUNDLE).join("run.sh"));
    cmd.args(args)
        .env("GPU_BUNDLE_DIR", UNPACK)
        .env("OUT", OUT)
        .env("GPU_BUNDLE_SMOKE", "1")
        .env_remove("GPU_BUNDLE_RESULTS");
    on_standin(&mut cmd, dir, true);
    eprintln!("$ {cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| format!("could not start {cmd:?}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        return Err(format!("{cmd:?} failed with {}", out.status));
    }
    Ok(stdout)
}

/// What is missing or wrong in `results` after a run of `built`; empty
/// when it holds everything a GPU run leaves.
pub(super) fn missing(results: &Path, built: &Built) -> Vec<String> {
    let read = |name: &str| fs::read_to_string(results.join(name)).ok();
    let mut wrong = Vec::new();
    let mut expect = |name: String, needle: &str| match read(&name) {
        None => wrong.push(format!("results/{name} was not written")),
        Some(text) if !text.contains(needle) => {
            wrong.push(format!("results/{name} does not say `{needle}`"));
        }
        Some(_) => {}
    };
    expect("device.csv".into(), "");
    expect("gpu-bench.txt".into(), "driver_cost:");
    expect("gpu-bench.txt".into(), "stand-in driver");
    expect("bench-quick.txt".into(), "offset-allocator");
    for test in &built.tests {
        expect(format!("{test}.log"), "test result: ok");
    }
    for bench in &built.benches {
        expect(format!("{bench}.txt"), "");
    }
    wrong
}

/// Runs the step; `Ok(summary line)`.
pub fn gpu_bundle_on_standin(_args: &[String]) -> Result<String, String> {
    let dir = install()?;
    let built = build_bundle(Kind::Smoke, &[])?;
    for folder in [UNPACK, OUT] {
        if Path::new(folder).exists() {
            fs::remove_dir_all(folder).map_err(|e| format!("clearing {folder}: {e}"))?;
        }
    }
    let listed = run_script(&dir, &["--dry-run"])?;
    if !listed.contains(" 0 broken") {
        return Err(format!("the dry run found a broken executable:\n{listed}"));
    }
    let stdout = run_script(&dir, &["--benches"])?;
    if !stdout.contains("== done: 0 failed step(s)") {
        return Err("the bundle's script did not end with `0 failed step(s)`".into());
    }
    let results = PathBuf::from(OUT).join("results");
    let wrong = missing(&results, &built);
    if !wrong.is_empty() {
        return Err(format!(
            "the bundle's script on the stand-in left its results incomplete:\n  {}",
            wrong.join("\n  ")
        ));
    }
    let summary = format!(
        "{} test binaries, {} bench binaries, gpu-bench and bench-quick ran from the bundle \
         (timings are the stand-in's, not claimed)",
        built.tests.len(),
        built.benches.len()
    );
    eprintln!("gpu-bundle-standin: {summary}");
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_missing_a_log_or_the_driver_cost_line_are_reported() {
        let dir = std::env::temp_dir().join(format!("xtask-standin-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let built = Built {
            tests: vec!["gpumem__adoption-1a2b".into()],
            benches: vec!["gpumem-benches__pools-3c4d".into()],
        };
        fs::write(dir.join("device.csv"), "nvidia-smi not found\n").unwrap();
        fs::write(dir.join("gpu-bench.txt"), "on the stand-in driver\n").unwrap();
        let wrong = missing(&dir, &built);
        assert!(
            wrong.iter().any(|w| w.contains("driver_cost:")),
            "{wrong:?}"
        );
        assert!(
            wrong.iter().any(|w| w.contains("bench-quick.txt")),
            "{wrong:?}"
        );
        assert!(
            wrong.iter().any(|w| w.contains("adoption-1a2b.log")),
            "{wrong:?}"
        );
        assert!(
            wrong.iter().any(|w| w.contains("pools-3c4d.txt")),
            "{wrong:?}"
        );
        fs::write(
            dir.join("gpu-bench.txt"),
            "**On the stand-in driver**\ndriver_cost:x\n",
        )
        .unwrap();
        fs::write(dir.join("bench-quick.txt"), "| offset-allocator |\n").unwrap();
        fs::write(
            dir.join("gpumem__adoption-1a2b.log"),
            "test result: ok. 3 passed\n",
        )
        .unwrap();
        fs::write(dir.join("gpumem-benches__pools-3c4d.txt"), "").unwrap();
        assert_eq!(missing(&dir, &built), Vec::<String>::new());
        fs::remove_dir_all(&dir).unwrap();
    }
}
