//! The scratch crate under `target/burn-client/`: its own workspace, lock
//! file and target dir, one binary (`xtask/burn-client/src/`) that depends
//! on Burn from crates.io, and a `[patch.crates-io]` entry for cubecl-wgpu
//! pointing at `patched/cubecl-wgpu`: the published source with
//! cubecl-client's patch (`xtask/cubecl/cubecl-wgpu.patch`, the buffer
//! counts) and this task's (`xtask/burn-client/engine-choice.patch`, the
//! main memory's engine chosen at run time), and the adapter as a
//! dependency. One build serves both engines.
//!
//! Files are rewritten only when their content changes, and the copy only
//! when a patch or the adapter's path changes, so a second run builds
//! nothing.

use std::path::{Path, PathBuf};

use crate::cubecl_client::scratch::{
    PATCH, VERSION, add_adapter, apply_patch, copy_dir, registry_source, remove_dir, write,
    write_if_changed,
};

/// The Burn version, the one that pins cubecl [`VERSION`].
pub const BURN: &str = "0.23.0-pre.1";

/// The patch that makes the main memory's engine a run-time choice.
const ENGINE_PATCH: &str = include_str!("../../burn-client/engine-choice.patch");

/// The binary's sources, written into the scratch crate's `src/`.
const SOURCES: [(&str, &str); 7] = [
    ("main.rs", include_str!("../../burn-client/src/main.rs")),
    ("cnn.rs", include_str!("../../burn-client/src/cnn.rs")),
    ("lm.rs", include_str!("../../burn-client/src/lm.rs")),
    ("lstm.rs", include_str!("../../burn-client/src/lstm.rs")),
    ("data.rs", include_str!("../../burn-client/src/data.rs")),
    ("report.rs", include_str!("../../burn-client/src/report.rs")),
    (
        "scenarios.rs",
        include_str!("../../burn-client/src/scenarios.rs"),
    ),
];

/// Where the scratch crate lives.
#[derive(Debug, Clone)]
pub struct Scratch {
    /// `target/burn-client` of the repository.
    pub dir: PathBuf,
}

impl Scratch {
    pub fn manifest(&self) -> PathBuf {
        self.dir.join("Cargo.toml")
    }

    pub fn target(&self) -> PathBuf {
        self.dir.join("target")
    }

    /// The release binary the build makes.
    pub fn binary(&self) -> PathBuf {
        self.target().join("release/burn-client")
    }
}

/// Writes (or refreshes) the scratch crate of the repository at `root`,
/// whose adapter is `adapter` (`crates/gpumem-cubecl`).
pub fn prepare(root: &Path, adapter: &Path) -> Result<Scratch, String> {
    let scratch = Scratch {
        dir: root.join("target/burn-client"),
    };
    patched_wgpu(&scratch.dir, adapter)?;
    write_if_changed(&scratch.manifest(), &manifest())?;
    for (name, text) in SOURCES {
        write_if_changed(&scratch.dir.join("src").join(name), text)?;
    }
    Ok(scratch)
}

/// The runtime-selectable cubecl-wgpu under `dir/patched/cubecl-wgpu`
/// (`dir` is `target/burn-client`), copied and patched only when a patch or
/// the adapter's path changed; returns its path. `burn-suite` patches
/// through the same copy, so that the crates both tasks share build once.
pub fn patched_wgpu(dir: &Path, adapter: &Path) -> Result<PathBuf, String> {
    let patched = dir.join("patched");
    let copy = patched.join("cubecl-wgpu");
    let stamp = format!(
        "{VERSION}\nadapter: {}\n{PATCH}\n{ENGINE_PATCH}",
        adapter.display()
    );
    let stamp_file = patched.join("stamp");
    if std::fs::read_to_string(&stamp_file).ok().as_deref() != Some(stamp.as_str()) {
        let wgpu = registry_source(dir, "cubecl-wgpu")?;
        remove_dir(&patched)?;
        copy_dir(&wgpu, &copy)?;
        apply_patch(&copy, "gpumem.patch", PATCH)?;
        apply_patch(&copy, "engine-choice.patch", ENGINE_PATCH)?;
        add_adapter(&copy.join("Cargo.toml"), adapter)?;
        write(&stamp_file, &stamp)?;
    }
    Ok(copy)
}

/// The scratch crate's manifest. Burn without its default features: those
/// switch on autotune (kernels picked by timing, which can change a result
/// between runs) and fusion.
fn manifest() -> String {
    format!(
        r#"# Written by gpumem's `cargo xtask burn-client`; rewritten on every run.
[package]
name = "burn-client"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]
exclude = ["patched/cubecl-wgpu"]

[dependencies]
burn = {{ version = "={BURN}", default-features = false, features = ["std", "wgpu", "autodiff", "optim"] }}

[patch.crates-io]
cubecl-wgpu = {{ path = "patched/cubecl-wgpu" }}

[profile.release]
debug = 0
incremental = false
"#
    )
}
