//! Building the suite's test binaries once and running each on an engine.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::scratch::Scratch;
use crate::burn_client::runs::set_private;
use crate::cubecl_client::binaries::test_binary;
use crate::cubecl_client::engine::Engine;
use crate::cubecl_client::libtest::Unpassed;
use crate::cubecl_client::runner::{rerun_failures, run_binary};
use crate::cubecl_client::scratch::write;
use crate::cubecl_client::table::{Counts, Row};

/// The longest one binary may run before it is killed and its row says so.
/// The tensor suite, the largest, runs its 1,700 tests on one thread.
const LIMIT: Duration = Duration::from_secs(3600);

/// Builds the named test binaries in release (burn-client's profile, so the
/// crates they share build once), `-j 2`; returns each binary's path.
pub fn build(scratch: &Scratch, names: &[String]) -> Result<BTreeMap<String, PathBuf>, String> {
    let mut cmd = crate::cargo(&["test", "--release", "--no-run", "-j", "2"]);
    cmd.args(["--message-format", "json-render-diagnostics"])
        .arg("--manifest-path")
        .arg(scratch.manifest())
        .arg("--target-dir")
        .arg(&scratch.target)
        .env("CARGO_INCREMENTAL", "0")
        .stdout(Stdio::piped());
    for name in names {
        cmd.args(["--test", name]);
    }
    eprintln!("$ {cmd:?}");
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("could not start {cmd:?}: {e}"))?;
    let mut binaries = BTreeMap::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some((target, exe)) = test_binary(&line) {
                binaries.insert(target, exe);
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for {cmd:?}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building Burn's suite failed ({status}); cargo's errors are above"
        ));
    }
    eprintln!(
        "burn-suite: built {} test binaries in {:.0} s",
        names.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(binaries)
}

/// The environment every run of a binary on `engine` gets, the counts file
/// aside: the engine, the wgpu device (so that no other backend answers
/// `Device::default()`), and a private runtime dir (it silences Mesa's
/// "XDG_RUNTIME_DIR is invalid").
fn setup(cmd: &mut Command, dir: &Path, engine: Engine) {
    cmd.current_dir(dir)
        .env("CARGO_MANIFEST_DIR", dir)
        .env("GPUMEM_CUBECL_ENGINE", engine.name())
        .env("BURN_DEVICE", "wgpu")
        .env("XDG_RUNTIME_DIR", dir.join("xdg-runtime"))
        .env_remove("GPUMEM_TRACE");
}

/// The private runtime dir every run gets (see [`setup`]).
fn runtime_dir(scratch: &Scratch) -> Result<(), String> {
    let runtime = scratch.dir.join("xdg-runtime");
    write(&runtime.join(".keep"), "")?;
    set_private(&runtime);
    Ok(())
}

/// The binary whose run fills CubeCL's environment store before anything
/// is measured: its fusion tests make CubeCL's throughput probe.
pub const WARMS: &str = "memory_cleaning";

/// Fills CubeCL's environment store with one unmeasured run of [`WARMS`]
/// on CubeCL's engine (a few seconds), when it was built. On its first use
/// on a machine CubeCL probes the device's throughput with a buffer of the
/// device's largest page (256 MiB on lavapipe) through the main memory,
/// and keeps the result in its store (`target/environment/` of the
/// workspace): measured cold, whichever engine ran first would carry that
/// buffer in its peak. Returns whether it ran.
pub fn warm_up(scratch: &Scratch, binaries: &BTreeMap<String, PathBuf>) -> Result<bool, String> {
    let Some(exe) = binaries.get(WARMS) else {
        return Ok(false);
    };
    runtime_dir(scratch)?;
    let mut cmd = Command::new(exe);
    cmd.arg("--test-threads=1").stderr(Stdio::null());
    setup(&mut cmd, &scratch.dir, Engine::Cubecl);
    eprintln!("$ {cmd:?}   # unmeasured: fills CubeCL's environment store");
    run_binary(&mut cmd, LIMIT)?;
    Ok(true)
}

/// Runs the binary `exe` of the suite `name` on `engine`, one test thread,
/// then each failed test once more alone.
pub fn run(
    scratch: &Scratch,
    name: &str,
    exe: &Path,
    engine: Engine,
    skip: &[&str],
) -> Result<Row, String> {
    runtime_dir(scratch)?;
    let counts_file = scratch
        .dir
        .join("counts")
        .join(format!("{}-{name}.txt", engine.name()));
    write(&counts_file, "")?;
    let mut cmd = Command::new(exe);
    cmd.arg("--test-threads=1");
    for test in skip {
        cmd.args(["--skip", test]);
    }
    setup(&mut cmd, &scratch.dir, engine);
    cmd.env("GPUMEM_CUBECL_COUNTS", &counts_file);
    eprintln!("$ {cmd:?}   # {name} on {}", engine.name());
    let (mut outcome, stopped) = run_binary(&mut cmd, LIMIT)?;
    if stopped.is_none() {
        let dir = scratch.dir.clone();
        let again = move |cmd: &mut Command| setup(cmd, &dir, engine);
        rerun_failures(exe, &again, &mut outcome)?;
    }
    let counts = std::fs::read_to_string(&counts_file)
        .ok()
        .and_then(|text| Counts::parse(&text));
    Ok(Row {
        suite: name.to_string(),
        engine: engine.name().to_string(),
        outcome,
        left_out: skip
            .iter()
            .map(|test| Unpassed {
                test: test.to_string(),
                reason: super::LEFT_OUT
                    .iter()
                    .find(|l| l.test == *test)
                    .map(|l| l.reason.to_string()),
            })
            .collect(),
        counts,
        stopped,
    })
}
