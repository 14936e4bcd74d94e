//! Running one suite's test binary: one test thread, a time limit, and one
//! rerun alone for each test that failed (timing tests on a loaded CPU).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::binaries::Binaries;
use super::engine::Engine;
use super::libtest::{Outcome, Unpassed};
use super::scratch::Scratch;
use super::suites::{self, Suite};
use super::table::{Counts, Row};

/// The longest one binary may run before it is killed and its row says so
/// (the slowest suite takes under a minute on lavapipe).
const LIMIT: Duration = Duration::from_secs(300);

/// The variable the patched runtime reads: where to write its counts.
const COUNTS_VAR: &str = "GPUMEM_CUBECL_COUNTS";

/// Runs one suite's binary with one test thread and reads its output and
/// the counts the patched runtime wrote.
pub fn run_suite(
    scratch: &Scratch,
    binaries: &Binaries,
    suite: &Suite,
    engine: Option<Engine>,
) -> Result<Row, String> {
    let engine_name = engine.map_or("—", Engine::name);
    let exe = binaries.by_target.get(&suite.target).ok_or_else(|| {
        format!(
            "the build made no test binary named {} (made: {:?})",
            suite.target,
            binaries.by_target.keys().collect::<Vec<_>>()
        )
    })?;
    let counts_file = scratch.dir.join("counts").join(format!(
        "{}-{}.txt",
        engine.map_or("none", Engine::name),
        suite.target
    ));
    if let Some(dir) = counts_file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let _ = std::fs::remove_file(&counts_file);
    let left = suites::skips(suite, engine);
    let cwd = scratch.dir.join(suite.cwd);
    let mut cmd = Command::new(exe);
    cmd.arg("--test-threads=1");
    for l in &left {
        cmd.args(["--skip", l.test]);
    }
    cmd.current_dir(&cwd)
        .env("CARGO_MANIFEST_DIR", &cwd)
        .env(COUNTS_VAR, &counts_file);
    eprintln!("$ {cmd:?}   # {} on {engine_name}", suite.name);
    let (mut outcome, stopped) = run_binary(&mut cmd, LIMIT)?;
    if stopped.is_none() {
        let rerun = |cmd: &mut Command| {
            cmd.current_dir(&cwd).env("CARGO_MANIFEST_DIR", &cwd);
        };
        rerun_failures(exe, &rerun, &mut outcome)?;
    }
    let counts = std::fs::read_to_string(&counts_file)
        .ok()
        .and_then(|text| Counts::parse(&text));
    Ok(Row {
        suite: suite.name.clone(),
        engine: engine_name.to_string(),
        outcome,
        left_out: left
            .iter()
            .map(|l| Unpassed {
                test: l.test.to_string(),
                reason: Some(l.reason.to_string()),
            })
            .collect(),
        counts,
        stopped,
    })
}

/// Runs `cmd`, echoing and reading its output, killed after `limit`;
/// returns what libtest said and, when it did not reach its result line,
/// why.
pub(crate) fn run_binary(
    cmd: &mut Command,
    limit: Duration,
) -> Result<(Outcome, Option<String>), String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start {cmd:?}: {e}"))?;
    let done = Arc::new(AtomicBool::new(false));
    let timed_out = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (done, timed_out, pid) = (done.clone(), timed_out.clone(), child.id());
        std::thread::spawn(move || {
            let started = Instant::now();
            while !done.load(Ordering::Relaxed) {
                if started.elapsed() > limit {
                    timed_out.store(true, Ordering::Relaxed);
                    let _ = Command::new("kill").arg(pid.to_string()).status();
                    return;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    let mut outcome = Outcome::default();
    if let Some(stdout) = child.stdout.take() {
        let mut out = std::io::stdout();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            outcome.line(&line);
            let _ = writeln!(out, "{line}");
        }
    }
    let status = child.wait();
    done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    let status = status.map_err(|e| format!("waiting for {cmd:?}: {e}"))?;
    let stopped = if timed_out.load(Ordering::Relaxed) {
        Some(format!("killed after {} s", limit.as_secs()))
    } else {
        (!outcome.finished).then(|| format!("no result line; the binary exited with {status}"))
    };
    Ok((outcome, stopped))
}

/// Runs each failed test once more, alone; one that passes then counts as
/// passed and is listed as rerun. `setup` gives each rerun the suite's
/// directory and environment. Its counts go nowhere (the suite's own run
/// wrote them).
pub(crate) fn rerun_failures(
    exe: &Path,
    setup: &dyn Fn(&mut Command),
    outcome: &mut Outcome,
) -> Result<(), String> {
    for test in std::mem::take(&mut outcome.failed) {
        let mut cmd = Command::new(exe);
        cmd.args(["--test-threads=1", "--exact", &test.test]);
        setup(&mut cmd);
        cmd.env_remove(COUNTS_VAR);
        eprintln!("$ {cmd:?}   # rerun alone");
        let (again, stopped) = run_binary(&mut cmd, LIMIT)?;
        if stopped.is_none() && again.passed == 1 && again.failed.is_empty() {
            outcome.passed += 1;
            outcome.rerun.push(test);
        } else {
            outcome.failed.push(test);
        }
    }
    Ok(())
}
