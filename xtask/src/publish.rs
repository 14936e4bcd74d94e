//! What a runtime depending on gpumem's crates needs to hold: the library
//! crates package as they would publish, their API docs build without
//! warnings, and the declared minimum Rust version is the one they build on.
//!
//! - `package`: `cargo package` of every publishable crate in one call, in
//!   dependency order. Cargo packs the workspace's crates into a local
//!   overlay registry as it goes, so mem-pools verifies against the packed
//!   mem-storage without it being on crates.io; verification builds each
//!   unpacked crate.
//! - `doc`: `cargo doc --no-deps --workspace` with `RUSTDOCFLAGS=-D warnings`.
//! - `msrv`: the workspace's `rust-version` against the compiler CI runs
//!   (`rustc --version`). Equal: every build of the run was on the declared
//!   version. Newer: the code is also built with `cargo +VERSION check` when
//!   rustup has that toolchain installed, else the step says it skipped and
//!   why (this workplace cannot download toolchains). Older: a failure.

use crate::{cargo, run};
use std::process::Command;

/// The crates a runtime may depend on, lowest layer first (the order
/// `cargo publish` would need).
pub const PUBLISHED: &[&str] = &[
    "mem-storage",
    "mem-budget",
    "mem-pools",
    "mem-relocate",
    "mem-capture",
    "gpumem",
    "gpumem-replay",
    "gpumem-cli",
];

/// `cargo xtask package`: every publishable crate packed and verified.
pub fn package(_args: &[String]) -> Result<(), String> {
    let mut args = vec!["package", "--allow-dirty"];
    for name in PUBLISHED {
        args.extend(["-p", name]);
    }
    forget_unpacked_overlays()?;
    forget_earlier_verifications()?;
    // Verification builds in the workspace's target/ (dev profile), so the
    // dependencies are compiled once for all eight.
    run(&mut cargo(&args))
}

/// Forgets the builds an earlier `package` run verified in this target
/// dir: cargo takes a registry crate as immutable, so a mem-pools 0.1.0
/// built from the overlay registry last time would be linked again
/// unchanged. Only where an earlier run left its overlay registry
/// (`target/package/tmp-registry`): a clean clone builds nothing twice.
/// Removing the fingerprints of the published crates makes cargo rebuild
/// them (path and overlay builds alike); nothing else is touched.
fn forget_earlier_verifications() -> Result<(), String> {
    let target = std::path::Path::new("target");
    if !target.join("package").join("tmp-registry").exists() {
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(target.join("debug").join(".fingerprint")) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // `<package>-<16 hex digits>`.
        let Some((package, hash)) = name.rsplit_once('-') else {
            continue;
        };
        if hash.len() == 16 && PUBLISHED.contains(&package) {
            std::fs::remove_dir_all(entry.path())
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// Removes what earlier `package` runs unpacked from cargo's local overlay
/// registries (`$CARGO_HOME/registry/src/-<hash>/`, one per target dir).
///
/// Cargo unpacks an overlay crate once and reuses the folder whenever the
/// name and version match, so after a change to mem-pools the next
/// verification of gpumem would build against the mem-pools of an earlier
/// run (same 0.1.0) and fail on the new items. A clean machine has no such
/// folder; a developer's has one per earlier run. crates.io's folders
/// (`index.crates.io-…`) are never touched.
fn forget_unpacked_overlays() -> Result<(), String> {
    let home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo")));
    let Some(home) = home else {
        return Ok(());
    };
    let Ok(registries) = std::fs::read_dir(home.join("registry").join("src")) else {
        return Ok(());
    };
    for registry in registries.flatten() {
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        let Ok(crates) = std::fs::read_dir(registry.path()) else {
            continue;
        };
        for unpacked in crates.flatten() {
            let name = unpacked.file_name().to_string_lossy().into_owned();
            let ours = PUBLISHED.iter().any(|c| {
                name.strip_prefix(c)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .is_some_and(|v| v.starts_with(|ch: char| ch.is_ascii_digit()))
            });
            if ours {
                std::fs::remove_dir_all(unpacked.path())
                    .map_err(|e| format!("{}: {e}", unpacked.path().display()))?;
            }
        }
    }
    Ok(())
}

/// `cargo xtask doc`: API docs of every crate, warnings denied.
pub fn doc(_args: &[String]) -> Result<(), String> {
    let mut cmd = cargo(&["doc", "--no-deps", "--workspace"]);
    cmd.env("RUSTDOCFLAGS", "-D warnings");
    run(&mut cmd)
}

/// A `major.minor[.patch]` version.
fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text.trim().split('.').map(|p| p.parse::<u64>().ok());
    let major = parts.next()??;
    let minor = parts.next()??;
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

/// The workspace's declared `rust-version` (from the root Cargo.toml).
fn declared_rust_version() -> Result<String, String> {
    let text = std::fs::read_to_string("Cargo.toml").map_err(|e| format!("Cargo.toml: {e}"))?;
    text.lines()
        .find_map(|line| {
            let value = line.trim().strip_prefix("rust-version")?.trim();
            Some(
                value
                    .strip_prefix('=')?
                    .trim()
                    .trim_matches('"')
                    .to_string(),
            )
        })
        .ok_or_else(|| "Cargo.toml declares no rust-version".to_string())
}

/// The version of the compiler cargo uses here (`rustc --version`).
fn compiler_version() -> Result<String, String> {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .arg("--version")
        .output()
        .map_err(|e| format!("could not run {rustc} --version: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // "rustc 1.95.0 (… 2026-…)", "rustc 1.96.0-nightly (…)"
    text.split_whitespace()
        .nth(1)
        .map(|v| v.split('-').next().unwrap_or(v).to_string())
        .ok_or_else(|| format!("unexpected `rustc --version` output: {text}"))
}

/// Whether rustup has `toolchain` installed (never downloads one).
fn toolchain_installed(toolchain: &str) -> bool {
    Command::new("rustup")
        .args(["toolchain", "list"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.starts_with(&format!("{toolchain}-")) || l.trim() == toolchain)
        })
        .unwrap_or(false)
}

/// How the minimum-version check went.
#[derive(Debug, PartialEq, Eq)]
pub enum Msrv {
    /// It was checked; the text says how.
    Checked(String),
    /// It could not be checked here; the text says why.
    Skipped(String),
}

/// `cargo xtask msrv`: the declared minimum Rust version against the
/// compiler in use, and a build on the declared version where installed.
pub fn msrv(_args: &[String]) -> Result<Msrv, String> {
    let declared = declared_rust_version()?;
    let compiler = compiler_version()?;
    let (Some(want), Some(have)) = (parse_version(&declared), parse_version(&compiler)) else {
        return Err(format!(
            "cannot read versions: declared {declared}, rustc {compiler}"
        ));
    };
    let outcome = compare(want, have, &declared, &compiler, toolchain_installed)?;
    if let Msrv::Checked(ref how) = outcome
        && how.starts_with("build")
    {
        let toolchain = format!("+{}.{}.{}", want.0, want.1, want.2);
        let mut cmd = cargo(&[&toolchain, "check", "--workspace", "--all-targets"]);
        cmd.env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("CARGO")
            .env_remove("RUSTC")
            .env("CARGO_TARGET_DIR", "target/msrv");
        run(&mut cmd)?;
    }
    match &outcome {
        Msrv::Checked(how) => eprintln!("msrv: {how}"),
        Msrv::Skipped(why) => eprintln!("skipping the msrv build: {why}"),
    }
    Ok(outcome)
}

/// The decision, apart from running anything: `Checked("build …")` asks
/// for a build on the declared toolchain.
fn compare(
    want: (u64, u64, u64),
    have: (u64, u64, u64),
    declared: &str,
    compiler: &str,
    installed: impl Fn(&str) -> bool,
) -> Result<Msrv, String> {
    let exact = format!("{}.{}.{}", want.0, want.1, want.2);
    if have < want {
        return Err(format!(
            "rustc {compiler} is older than the declared rust-version {declared}"
        ));
    }
    if (have.0, have.1) == (want.0, want.1) {
        return Ok(Msrv::Checked(format!(
            "rust-version {declared}: every build of this run used rustc {compiler}, the declared version"
        )));
    }
    if installed(&exact) {
        return Ok(Msrv::Checked(format!(
            "build with toolchain {exact} (rust-version {declared}; CI's rustc is {compiler})"
        )));
    }
    Ok(Msrv::Skipped(format!(
        "rust-version {declared} is older than this rustc ({compiler}) and toolchain {exact} is not installed \
         (`rustup toolchain install {exact}` where the network allows)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_with_and_without_a_patch() {
        assert_eq!(parse_version("1.95"), Some((1, 95, 0)));
        assert_eq!(parse_version("1.95.2"), Some((1, 95, 2)));
        assert_eq!(parse_version("one"), None);
    }

    #[test]
    fn an_older_compiler_fails_an_equal_one_passes_and_a_newer_one_builds_or_skips() {
        let none = |_: &str| false;
        let all = |_: &str| true;
        assert!(compare((1, 95, 0), (1, 94, 1), "1.95", "1.94.1", none).is_err());
        assert!(matches!(
            compare((1, 95, 0), (1, 95, 0), "1.95", "1.95.0", none),
            Ok(Msrv::Checked(how)) if how.starts_with("rust-version")
        ));
        assert!(matches!(
            compare((1, 95, 0), (1, 97, 0), "1.95", "1.97.0", all),
            Ok(Msrv::Checked(how)) if how.starts_with("build")
        ));
        assert!(matches!(
            compare((1, 95, 0), (1, 97, 0), "1.95", "1.97.0", none),
            Ok(Msrv::Skipped(why)) if why.contains("not installed")
        ));
    }
}
