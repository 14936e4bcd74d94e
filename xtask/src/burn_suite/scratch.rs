//! The scratch crate under `target/burn-suite/`: Burn's
//! `crates/burn-backend-tests` (its `src/`, `tests/` and `cubecl.toml`)
//! copied from a Burn checkout at run time, with this repository's patch
//! (`xtask/burn-suite/published.patch`, what the suite needs to build
//! against the published 0.23.0-pre.1 crates), and a manifest of our own
//! that names those crates and patches cubecl-wgpu with burn-client's
//! runtime-selectable copy. It builds into burn-client's target dir, so the
//! crates both tasks share build once.
//!
//! The suite is copied into a staging dir, patched there, and only then
//! written into the crate, each file only when its content changed: a
//! second run rebuilds nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::burn_client::scratch::{BURN, patched_wgpu};
use crate::cubecl_client::scratch::{apply_patch, remove_dir, write_if_changed};

/// Where Burn keeps the suite, under a checkout's root.
pub const SUITE_DIR: &str = "crates/burn-backend-tests";

/// The suite's files the scratch crate takes (the benches stay behind).
const TAKEN: [&str; 3] = ["src", "tests", "cubecl.toml"];

/// What the suite needs changed to build against the published crates.
const PATCH: &str = include_str!("../../burn-suite/published.patch");

/// The scratch crate.
#[derive(Debug, Clone)]
pub struct Scratch {
    /// `target/burn-suite` of the repository.
    pub dir: PathBuf,
    /// burn-client's target dir, shared.
    pub target: PathBuf,
}

impl Scratch {
    pub fn manifest(&self) -> PathBuf {
        self.dir.join("Cargo.toml")
    }

    /// The suite's test binaries, by name (`tests/NAME.rs`), sorted.
    pub fn binaries(&self) -> Result<Vec<String>, String> {
        let tests = self.dir.join("tests");
        let entries = std::fs::read_dir(&tests).map_err(|e| format!("{}: {e}", tests.display()))?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".rs").map(str::to_string)
            })
            .collect();
        names.sort();
        Ok(names)
    }
}

/// The commit of the Burn checkout at `burn_src`, when it is a git work tree.
pub fn commit(burn_src: &Path) -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(burn_src)
        .env(
            "GIT_CEILING_DIRECTORIES",
            burn_src.parent().unwrap_or(burn_src),
        )
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

/// Writes (or refreshes) the scratch crate of the repository at `root` from
/// the Burn checkout at `burn_src`.
pub fn prepare(root: &Path, adapter: &Path, burn_src: &Path) -> Result<Scratch, String> {
    let client = root.join("target/burn-client");
    let wgpu = patched_wgpu(&client, adapter)?;
    let scratch = Scratch {
        dir: root.join("target/burn-suite"),
        target: client.join("target"),
    };
    let staged = scratch.dir.join("staged");
    remove_dir(&staged)?;
    let suite = burn_src.join(SUITE_DIR);
    for name in TAKEN {
        copy(&suite.join(name), &staged.join(name))?;
    }
    apply_patch(&staged, "published.patch", PATCH)?;
    std::fs::remove_file(staged.join("published.patch"))
        .map_err(|e| format!("{}: {e}", staged.display()))?;
    for name in TAKEN {
        sync(&staged.join(name), &scratch.dir.join(name))?;
    }
    remove_dir(&staged)?;
    write_if_changed(&scratch.manifest(), &manifest(&wgpu))?;
    Ok(scratch)
}

/// Copies a file or a folder.
fn copy(from: &Path, to: &Path) -> Result<(), String> {
    if from.is_dir() {
        crate::cubecl_client::scratch::copy_dir(from, to)
    } else {
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::copy(from, to)
            .map(drop)
            .map_err(|e| format!("cannot copy {}: {e}", from.display()))
    }
}

/// Writes every file under `from` to the same place under `to` when its
/// content differs, and removes what `to` holds that `from` does not.
fn sync(from: &Path, to: &Path) -> Result<(), String> {
    if !from.is_dir() {
        let text = std::fs::read_to_string(from)
            .map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        return write_if_changed(to, &text);
    }
    let entries = std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?;
    let mut kept = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        kept.push(entry.file_name());
        sync(&entry.path(), &to.join(entry.file_name()))?;
    }
    if let Ok(entries) = std::fs::read_dir(to) {
        for entry in entries.filter_map(Result::ok) {
            if !kept.contains(&entry.file_name()) {
                let path = entry.path();
                if path.is_dir() {
                    remove_dir(&path)?;
                } else {
                    std::fs::remove_file(&path)
                        .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
                }
            }
        }
    }
    Ok(())
}

/// The scratch crate's manifest: Burn's own for the suite, less the
/// backends other than wgpu and the benches, with the published crates'
/// versions. Its default features are the ones Burn's `cargo test-wgpu`
/// turns on (`wgpu`, `std`, `fusion`).
fn manifest(wgpu: &Path) -> String {
    format!(
        r#"# Written by gpumem's `cargo xtask burn-suite`; rewritten on every run.
[package]
name = "burn-backend-tests"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]

[lib]
proc-macro = true

[features]
default = ["std", "wgpu", "fusion"]
std = ["burn-tensor/std"]
wgpu = ["burn-tensor/wgpu", "quantization", "cube"]
fusion = ["burn-tensor/fusion", "burn-fusion/test-util", "burn-cubecl-fusion/test-util"]
cube = ["cubek", "autotune", "burn-cubecl", "burn-cubecl-fusion", "burn-tensor/flex"]
autotune = ["burn-tensor/autotune"]
quantization = []

[dependencies]
burn-tensor = {{ version = "={BURN}", default-features = false, features = ["autodiff"] }}
burn-backend = {{ version = "={BURN}", default-features = false }}
burn-autodiff = {{ version = "={BURN}", default-features = false, features = ["export_tests"] }}
burn-cubecl = {{ version = "={BURN}", optional = true, features = ["default", "fusion"] }}
burn-cubecl-fusion = {{ version = "={BURN}", optional = true }}
burn-fusion = {{ version = "={BURN}", optional = true }}
cubek = {{ version = "=0.4.0-pre.1", default-features = false, features = ["random"], optional = true }}
num-traits = {{ version = "0.2.19", default-features = false, features = ["std"] }}
serial_test = "4"
rand = {{ version = "0.10", default-features = false, features = ["std_rng"] }}
proc-macro2 = "1"
quote = "1"
syn = {{ version = "2", features = ["full", "extra-traits"] }}

[dev-dependencies]
ctor = "0.10.1"

[patch.crates-io]
cubecl-wgpu = {{ path = {wgpu:?} }}

[profile.release]
debug = 0
incremental = false
"#,
        wgpu = wgpu.display().to_string()
    )
}
