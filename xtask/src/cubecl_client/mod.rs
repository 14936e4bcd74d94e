//! `cargo xtask cubecl-client [--engine cubecl|gpumem|both]`: CubeCL's own
//! test suites on CubeCL's wgpu runtime, on a real Vulkan driver (lavapipe
//! on a CPU-only machine), with the runtime's main memory on CubeCL's
//! engine and on gpumem's, side by side.
//!
//! It writes a scratch crate under `target/cubecl-client/` (`scratch.rs`)
//! that depends on the pinned CubeCL crates from crates.io and patches
//! cubecl-wgpu with a copy carrying the project's patch
//! (`xtask/cubecl/cubecl-wgpu.patch`): the main memory's type becomes
//! `gpumem_cubecl::MemoryManagement` when the feature `gpumem` is on, and
//! its wgpu buffers are counted (bytes held at peak, buffers created). It
//! builds with `-j 2`, no debug info, into the scratch crate's own target
//! dir, runs every suite (`suites.rs`) once per engine with one test thread
//! (so that peaks do not depend on how tests overlap), and prints the table
//! (`table.rs`), also written to `target/cubecl-client/table.md`. Fails when
//! a test fails. First it checks the adapter itself (`adapter.rs`: format,
//! clippy, its tests), which no other step builds. Without Vulkan it
//! skips, saying why (`vulkan.rs`), and so it does with
//! `GPUMEM_SKIP_CUBECL_CLIENT` set or with too little free disk for the
//! build (about 10 GiB cold, 3 GiB warm). Builds run without incremental
//! state, which would add gigabytes and is never reused here.

use std::path::{Path, PathBuf};

mod adapter;
pub(crate) mod binaries;
pub(crate) mod engine;
pub(crate) mod libtest;
pub(crate) mod runner;
pub(crate) mod scratch;
mod suites;
pub(crate) mod table;
pub(crate) mod vulkan;

use engine::Engine;

/// Set, it makes the task skip (a local `cargo xtask ci` without the
/// CubeCL build); CI leaves it unset.
const SKIP_VAR: &str = "GPUMEM_SKIP_CUBECL_CLIENT";

/// The repository root (xtask lives one level below it).
fn root() -> PathBuf {
    let xtask = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask.parent().unwrap_or(xtask).to_path_buf()
}

/// Free disk a cold build of both engines needs (366 crates, the test
/// binaries twice: about 7 GiB measured, with room to spare), and what a
/// warm one needs on top of what is already built.
const COLD_BUILD_BYTES: u64 = 10 << 30;
const WARM_BUILD_BYTES: u64 = 3 << 30;

/// Runs the task; `Ok(Some(reason))` when it skipped.
pub fn cubecl_client(args: &[String]) -> Result<Option<String>, String> {
    let mut engines = vec![Engine::Cubecl, Engine::Gpumem];
    let mut explicit = false;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--engine" => {
                let value = args.next().ok_or("--engine needs cubecl, gpumem or both")?;
                engines = Engine::parse(value)?;
                explicit = value != "both";
            }
            other => {
                return Err(format!(
                    "usage: cargo xtask cubecl-client [--engine cubecl|gpumem|both]; got {other:?}"
                ));
            }
        }
    }
    if std::env::var_os(SKIP_VAR).is_some() {
        let why = format!("skipping cubecl-client: {SKIP_VAR} is set");
        eprintln!("{why}");
        return Ok(Some(why));
    }
    if let Some(why) = vulkan::missing() {
        let why = format!("skipping cubecl-client: {why}");
        eprintln!("{why}");
        return Ok(Some(why));
    }
    let target = root().join("target");
    let need = (COLD_BUILD_BYTES, WARM_BUILD_BYTES);
    if let Some(why) = crate::disk::short_of(
        &target,
        &target.join("cubecl-client/target"),
        "CubeCL",
        need,
    ) {
        let why = format!("skipping cubecl-client: {why}");
        eprintln!("{why}");
        return Ok(Some(why));
    }
    eprintln!("cubecl-client: Vulkan devices: {:?}", vulkan::devices());
    let scratch = scratch::prepare(&root())?;
    let mut notes = Vec::new();
    if scratch.adapter.is_none() {
        let why = "the gpumem engine: crates/gpumem-cubecl is not in this tree";
        if explicit && engines == [Engine::Gpumem] {
            return Err(why.to_string());
        }
        engines.retain(|e| *e != Engine::Gpumem);
        notes.push(format!("skipped {why}"));
    }
    if let Some(adapter_dir) = &scratch.adapter {
        // The adapter's own tests and lints: no other step builds it.
        adapter::check(&scratch, adapter_dir)?;
    }
    let mut rows = Vec::new();
    let suites = suites::all();
    for (i, &engine) in engines.iter().enumerate() {
        let binaries = binaries::build(&scratch, engine)?;
        for suite in suites.iter().filter(|s| s.per_engine || i == 0) {
            let engine = suite.per_engine.then_some(engine);
            rows.push(runner::run_suite(&scratch, &binaries, suite, engine)?);
        }
    }
    let mut text = table::render(&rows);
    for line in table::held_more(&rows) {
        text.push_str(&format!("\n{line}\n"));
    }
    let out = scratch.dir.join("table.md");
    std::fs::write(&out, &text).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("\ncubecl-client (CubeCL {}):\n{text}", scratch::VERSION);
    for note in &notes {
        eprintln!("{note}");
    }
    eprintln!("written to {}", out.display());
    let red: Vec<String> = rows
        .iter()
        .filter(|r| !r.green())
        .map(|r| format!("{} on {}", r.suite, r.engine))
        .collect();
    if red.is_empty() {
        Ok(None)
    } else {
        Err(format!("tests failed in: {}", red.join(", ")))
    }
}
