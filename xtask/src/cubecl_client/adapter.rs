//! The adapter's own checks: `crates/gpumem-cubecl` is its own workspace
//! (so `cargo test --workspace` never compiles CubeCL), which leaves its
//! tests, lints and format to this task. They build into the scratch
//! crate's target dir, where the pinned CubeCL crates are already built.

use std::path::Path;

use super::scratch::Scratch;
use crate::{cargo, run};

/// Format check, clippy with warnings denied, and the tests of the adapter
/// at `adapter` (its folder).
pub fn check(scratch: &Scratch, adapter: &Path) -> Result<(), String> {
    let manifest = adapter.join("Cargo.toml");
    let with_target = |args: &[&str]| {
        let mut cmd = cargo(args);
        cmd.arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(scratch.target())
            .env("CARGO_PROFILE_DEV_DEBUG", "0")
            .env("CARGO_PROFILE_TEST_DEBUG", "0")
            .env("CARGO_INCREMENTAL", "0");
        cmd
    };
    let mut fmt = cargo(&["fmt", "--check", "--manifest-path"]);
    fmt.arg(&manifest);
    run(&mut fmt)?;
    let mut clippy = with_target(&["clippy", "-j", "2", "--all-targets"]);
    clippy.args(["--", "-D", "warnings"]);
    run(&mut clippy)?;
    run(&mut with_target(&["test", "-j", "2"]))
}
