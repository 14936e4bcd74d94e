//! The scratch crate under `target/cubecl-client/`: a crate of its own
//! (its own workspace, lock file and target dir) that depends on the pinned
//! CubeCL crates from crates.io and patches two of them with copies from
//! cargo's registry cache:
//! - `patched/cubecl-wgpu`: the published source with the project's patch
//!   (`xtask/cubecl/cubecl-wgpu.patch`) applied, and, when the adapter crate
//!   exists, a dependency on it and the feature `gpumem` that selects it;
//! - `patched/cubecl-server`: the published source unchanged, a member of
//!   the scratch workspace so that its own unit tests can run.
//!
//! Files are rewritten only when their content changes, and the copies only
//! when the patch or the adapter's presence changes, so a second run does
//! not rebuild CubeCL.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cargo;

/// The CubeCL version every crate is pinned to.
pub const VERSION: &str = "0.12.0-pre.1";

/// The project's patch to cubecl-wgpu.
pub(crate) const PATCH: &str = include_str!("../../cubecl/cubecl-wgpu.patch");
/// The scratch crate's test binaries that the project writes.
const CORE_TESTS: &str = include_str!("../../cubecl/core.rs");
const CORE_EXTRA_TESTS: &str = include_str!("../../cubecl/core_extra.rs");

/// cubecl-wgpu's integration tests (its `tests/`) that the scratch crate
/// copies. The other three (`device`, `launch_errors`, `profile_window`)
/// compile to nothing off macOS or without the `spirv` feature.
pub const WGPU_TESTS: [&str; 4] = [
    "graph",
    "relocation",
    "device_poisoned",
    "discarded_launch_profiling",
];

/// Where the scratch crate lives, and where the adapter is.
#[derive(Debug, Clone)]
pub struct Scratch {
    /// `target/cubecl-client` of the repository.
    pub dir: PathBuf,
    /// `crates/gpumem-cubecl`, when it exists.
    pub adapter: Option<PathBuf>,
}

impl Scratch {
    /// The scratch crate's manifest.
    pub fn manifest(&self) -> PathBuf {
        self.dir.join("Cargo.toml")
    }

    /// Its own target dir.
    pub fn target(&self) -> PathBuf {
        self.dir.join("target")
    }
}

/// Writes (or refreshes) the scratch crate for the repository at `root`.
pub fn prepare(root: &Path) -> Result<Scratch, String> {
    let adapter = root.join("crates/gpumem-cubecl");
    let scratch = Scratch {
        dir: root.join("target/cubecl-client"),
        adapter: adapter.join("Cargo.toml").exists().then_some(adapter),
    };
    let wgpu = registry_source(&scratch.dir, "cubecl-wgpu")?;
    let server = registry_source(&scratch.dir, "cubecl-server")?;
    let patched = scratch.dir.join("patched");
    // What the copies were made from; `add_adapter`'s shape is part of it.
    let stamp = format!(
        "{VERSION}\nadapter (a plain dependency): {:?}\n{PATCH}",
        scratch.adapter.as_deref()
    );
    let stamp_file = patched.join("stamp");
    if std::fs::read_to_string(&stamp_file).ok().as_deref() != Some(stamp.as_str()) {
        remove_dir(&patched)?;
        copy_dir(&wgpu, &patched.join("cubecl-wgpu"))?;
        copy_dir(&server, &patched.join("cubecl-server"))?;
        apply_patch(&patched.join("cubecl-wgpu"), "gpumem.patch", PATCH)?;
        if let Some(adapter) = &scratch.adapter {
            add_adapter(&patched.join("cubecl-wgpu/Cargo.toml"), adapter)?;
        }
        write(&stamp_file, &stamp)?;
    }
    write_if_changed(&scratch.manifest(), &manifest(scratch.adapter.is_some()))?;
    write_if_changed(
        &scratch.dir.join("src/lib.rs"),
        "//! Empty: the tests are in tests/.\n",
    )?;
    write_if_changed(&scratch.dir.join("tests/core.rs"), CORE_TESTS)?;
    write_if_changed(&scratch.dir.join("tests/core_extra.rs"), CORE_EXTRA_TESTS)?;
    for name in WGPU_TESTS {
        let from = wgpu.join("tests").join(format!("{name}.rs"));
        let text = std::fs::read_to_string(&from)
            .map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        write_if_changed(&scratch.dir.join(format!("tests/wgpu_{name}.rs")), &text)?;
    }
    Ok(scratch)
}

/// The scratch crate's manifest; with the adapter, its feature `gpumem`.
fn manifest(adapter: bool) -> String {
    let features = if adapter {
        "\n[features]\ngpumem = [\"cubecl-wgpu/gpumem\"]\n"
    } else {
        ""
    };
    format!(
        r#"# Written by gpumem's `cargo xtask cubecl-client`; rewritten on every run.
[package]
name = "cubecl-client"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]
members = [".", "patched/cubecl-server"]
exclude = ["patched/cubecl-wgpu"]

[dependencies]
cubecl-core = {{ version = "={VERSION}", features = ["export_tests"] }}
cubecl-wgpu = {{ version = "={VERSION}" }}
cubecl-server = {{ version = "={VERSION}" }}
cubecl-common = {{ version = "={VERSION}" }}
cubecl-environment = {{ version = "={VERSION}" }}
cubecl-ir = {{ version = "={VERSION}" }}
half = {{ version = "2.5", features = ["alloc", "num-traits", "serde"] }}
paste = "1"
test-log = {{ version = "0.2", default-features = false, features = ["trace"] }}
# tests/wgpu_device_poisoned.rs names `wgpu`; the features stay cubecl-wgpu's.
wgpu = {{ version = "30", default-features = false }}

[patch.crates-io]
cubecl-wgpu = {{ path = "patched/cubecl-wgpu" }}
cubecl-server = {{ path = "patched/cubecl-server" }}
{features}"#
    )
}

/// The published source of `krate` at [`VERSION`] in cargo's registry
/// cache, fetched first when it is not there.
pub(crate) fn registry_source(dir: &Path, krate: &str) -> Result<PathBuf, String> {
    if let Some(found) = find_in_registry(krate) {
        return Ok(found);
    }
    // A one-dependency crate, so that `cargo fetch` downloads the sources.
    let probe = dir.join("probe");
    write_if_changed(
        &probe.join("Cargo.toml"),
        &format!(
            "[package]\nname = \"probe\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\n\
             [workspace]\n\n[dependencies]\n{krate} = \"={VERSION}\"\n"
        ),
    )?;
    write_if_changed(&probe.join("src/lib.rs"), "")?;
    crate::run(cargo(&["fetch", "--manifest-path"]).arg(probe.join("Cargo.toml")))?;
    find_in_registry(krate).ok_or_else(|| {
        format!("{krate} {VERSION} is not in cargo's registry cache even after `cargo fetch`")
    })
}

fn find_in_registry(krate: &str) -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let src = home.join("registry/src");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&src)
        .ok()?
        .filter_map(Result::ok)
        .map(|index| index.path().join(format!("{krate}-{VERSION}")))
        .filter(|path| path.join("Cargo.toml").exists())
        .collect();
    found.sort();
    found.into_iter().next()
}

/// Applies the patch `text` (written to `dir/name`) with `git apply`,
/// outside any repository (the scratch crate sits inside this one's
/// `target/`, so the search stops above `dir`).
pub(crate) fn apply_patch(dir: &Path, name: &str, text: &str) -> Result<(), String> {
    write(&dir.join(name), text)?;
    let ceiling = dir.parent().unwrap_or(dir);
    let mut cmd = Command::new("git");
    cmd.args(["apply", name])
        .current_dir(dir)
        .env("GIT_CEILING_DIRECTORIES", ceiling);
    crate::run(&mut cmd)
}

/// Adds the adapter as a dependency and the feature `gpumem` that selects
/// it. The dependency is not optional: with it in the graph for both
/// engines, the features cargo unifies across the tree (rustix's, say) are
/// the same for both, and switching engines rebuilds only cubecl-wgpu and
/// the test binaries (an optional one rebuilt much of CubeCL: 503 s here).
pub(crate) fn add_adapter(manifest: &Path, adapter: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(manifest)
        .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
    let Some(text) = text
        .split_once("[features]\n")
        .map(|(head, tail)| format!("{head}[features]\ngpumem = []\n{tail}"))
    else {
        return Err(format!("{} has no [features] table", manifest.display()));
    };
    let text = format!(
        "{text}\n[dependencies.gpumem-cubecl]\npath = {:?}\n",
        adapter.display().to_string()
    );
    write(manifest, &text)
}

pub(crate) fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Writes `text` unless the file already holds it (keeps its mtime, so
/// cargo does not rebuild).
pub(crate) fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    write(path, text)
}

pub(crate) fn remove_dir(dir: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", dir.display()))
        }
        _ => Ok(()),
    }
}

pub(crate) fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    let entries = std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| format!("{}: {e}", src.display()))?;
            // The registry's mtimes, so that a fresh copy of an unchanged
            // file does not look newer than what cargo built from it.
            let modified = std::fs::metadata(&src).and_then(|m| m.modified());
            if let Ok(modified) = modified {
                let _ = std::fs::File::options()
                    .write(true)
                    .open(&dst)
                    .and_then(|f| f.set_modified(modified));
            }
        }
    }
    Ok(())
}
