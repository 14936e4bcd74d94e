//! `cargo xtask bench-cubecl [--runs N]`: gpumem beside CubeCL's memory
//! engine (cubecl-server 0.11.3 and 0.12.0-pre.1).
//!
//! Builds and runs `benches/cubecl-peers` in release over the built-in
//! workloads (`live` among them), the per-slot `span:SLOTS` shapes and every recorded trace in
//! `traces/`, one table per trace (see docs/benchmarks.md). The peer crate is outside the workspace (the
//! root `Cargo.toml` excludes it, and it has its own `Cargo.lock`), so
//! `cargo test`, clippy and `ci` never compile cubecl; only this task does.
//! Without `CARGO_TARGET_DIR` it builds into `target/cubecl-peers`.

use std::path::{Path, PathBuf};

use crate::{cargo, run};

/// The built-in workloads, as `gpumem compare --workload` names them
/// (`live`: 20,000 small slices live while one is freed and another
/// reserved; CubeCL's pages scan their slices, so `live:N` with a larger N
/// takes minutes).
const WORKLOADS: [&str; 6] = ["random", "training", "serving", "devlog", "growth", "live"];

/// The per-slot shapes: a slice of 1, 16, 512 and 4096 chunk slots (2 MiB
/// to 8 GiB) reserved and freed in place (`cubecl-peers`' `span:SLOTS`).
const SPANS: [&str; 4] = ["span:1", "span:16", "span:512", "span:4096"];

/// The repository root (xtask lives one level below it).
fn root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}

/// `traces/*.jsonl.gz`, sorted.
fn traces(root: &Path) -> Result<Vec<PathBuf>, String> {
    let dir = root.join("traces");
    let entries =
        std::fs::read_dir(&dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut traces: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".jsonl.gz"))
        })
        .collect();
    traces.sort();
    Ok(traces)
}

/// Runs the peer binary; `args` go to it (`--runs N`).
pub fn bench_cubecl(args: &[String]) -> Result<(), String> {
    let root = root();
    let manifest = root.join("benches/cubecl-peers/Cargo.toml");
    let manifest = manifest
        .to_str()
        .ok_or("the repository path is not UTF-8")?;
    let mut cmd = cargo(&["run", "--release", "--manifest-path", manifest]);
    if std::env::var_os("CARGO_TARGET_DIR").is_none() {
        cmd.arg("--target-dir")
            .arg(root.join("target/cubecl-peers"));
    }
    cmd.arg("--").args(args).args(WORKLOADS).args(SPANS);
    for trace in traces(&root)? {
        // Relative names read better in the tables.
        cmd.arg(trace.strip_prefix(&root).unwrap_or(&trace));
    }
    cmd.current_dir(&root);
    run(&mut cmd)
}
