//! The four runs, one process per run and engine: the binary's report
//! (`xtask/burn-client/src/report.rs`) and the buffer totals the patched
//! cubecl-wgpu writes at exit (`GPUMEM_CUBECL_COUNTS`), parsed.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::cubecl_client::scratch::write;

use crate::cubecl_client::engine::Engine;

/// One of the binary's runs and how many steps it takes.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    /// The binary's argument.
    pub name: &'static str,
    /// What the table calls it.
    pub title: &'static str,
    pub steps: usize,
}

/// The runs, in the order they run. The transformer's and the LSTM's
/// training run 35 steps: every pair of their 7 lengths and 5 batch sizes
/// once.
pub const RUNS: [Run; 4] = [
    Run {
        name: "cnn",
        title: "CNN, Adam, batch 32",
        steps: 30,
    },
    Run {
        name: "lm-train",
        title: "transformer LM, Adam, varying length and batch",
        steps: 35,
    },
    Run {
        name: "lm-infer",
        title: "transformer LM inference, varying batch",
        steps: 30,
    },
    Run {
        name: "lstm-train",
        title: "LSTM, Adam, varying length and batch",
        steps: 35,
    },
];

/// What one process reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Every step's loss, as its bit pattern.
    pub losses: Vec<u32>,
    /// The final parameters' checksum, and the outputs' (inference).
    pub params: String,
    pub outputs: String,
    /// Steps after the first third, and the seconds they took.
    pub timed_steps: usize,
    pub timed_seconds: f64,
    /// The process's wall time.
    pub wall_seconds: f64,
    /// The main memory's wgpu buffers: peak bytes, created, destroyed.
    pub peak_bytes: u64,
    pub created: u64,
    pub destroyed: u64,
}

impl Outcome {
    pub fn steps_per_second(&self) -> f64 {
        if self.timed_seconds > 0.0 {
            self.timed_steps as f64 / self.timed_seconds
        } else {
            0.0
        }
    }
}

/// Runs `run` on `engine` with the binary at `binary`, the totals going to
/// a file in `dir`; with `trace`, the adapter records a gpumem trace there.
pub fn execute(
    binary: &Path,
    dir: &Path,
    run: &Run,
    engine: Engine,
    trace: Option<&Path>,
) -> Result<Outcome, String> {
    let counts = dir.join(format!("counts-{}-{}.txt", run.name, engine.name()));
    let _ = std::fs::remove_file(&counts);
    // A private runtime dir silences Mesa's "XDG_RUNTIME_DIR is invalid".
    let runtime = dir.join("xdg-runtime");
    write(&runtime.join(".keep"), "")?;
    set_private(&runtime);
    let mut cmd = Command::new(binary);
    cmd.arg(run.name)
        .arg(run.steps.to_string())
        .env("GPUMEM_CUBECL_ENGINE", engine.name())
        .env("GPUMEM_CUBECL_COUNTS", &counts)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env_remove("GPUMEM_TRACE");
    if let Some(trace) = trace {
        cmd.env("GPUMEM_TRACE", trace);
    }
    eprintln!("$ {cmd:?}");
    let start = Instant::now();
    let out = cmd
        .output()
        .map_err(|e| format!("could not start {}: {e}", binary.display()))?;
    let wall = start.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{} on {} failed with {}:\n{stdout}\n{}",
            run.name,
            engine.name(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut outcome = parse_report(&stdout, run.steps)?;
    outcome.wall_seconds = wall;
    let totals = std::fs::read_to_string(&counts)
        .map_err(|e| format!("no buffer totals at {}: {e}", counts.display()))?;
    parse_counts(&totals, &mut outcome)?;
    Ok(outcome)
}

#[cfg(unix)]
pub(crate) fn set_private(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
}

#[cfg(not(unix))]
pub(crate) fn set_private(_dir: &Path) {}

/// The binary's report: `loss STEP BITS VALUE` lines in step order, one per
/// step, then `key value` lines.
pub fn parse_report(text: &str, steps: usize) -> Result<Outcome, String> {
    let mut outcome = Outcome::default();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let bad = || format!("cannot read the report line {line:?}");
        match fields.as_slice() {
            ["loss", step, bits, _] => {
                if step.parse::<usize>().ok() != Some(outcome.losses.len()) {
                    return Err(format!("loss out of order: {line:?}"));
                }
                outcome
                    .losses
                    .push(u32::from_str_radix(bits, 16).map_err(|_| bad())?);
            }
            ["timed_steps", n] => outcome.timed_steps = n.parse().map_err(|_| bad())?,
            ["timed_seconds", s] => outcome.timed_seconds = s.parse().map_err(|_| bad())?,
            ["params", hash] => outcome.params = hash.to_string(),
            ["outputs", hash] => outcome.outputs = hash.to_string(),
            _ => {}
        }
    }
    if outcome.losses.len() != steps {
        return Err(format!(
            "the report has {} losses, not {steps}",
            outcome.losses.len()
        ));
    }
    if outcome.params.is_empty() {
        return Err("the report has no parameter checksum".into());
    }
    Ok(outcome)
}

/// The patched storage's totals (`key value` lines) into `outcome`.
pub fn parse_counts(text: &str, outcome: &mut Outcome) -> Result<(), String> {
    outcome.peak_bytes = buffer_total(text, "peak_bytes ")?;
    outcome.created = buffer_total(text, "buffers_created ")?;
    outcome.destroyed = buffer_total(text, "buffers_destroyed ")?;
    Ok(())
}

/// The value of the patched storage's total `key` (a `key value` line).
pub fn buffer_total(text: &str, key: &str) -> Result<u64, String> {
    text.lines()
        .find_map(|line| line.strip_prefix(key)?.trim().parse().ok())
        .ok_or_else(|| format!("the buffer totals have no {key}: {text:?}"))
}

/// The oracle: the engine must not change a single result. `None` when
/// every loss, the parameters' checksum and the outputs' are the same bits;
/// otherwise what differs first.
pub fn differs(a: &Outcome, b: &Outcome) -> Option<String> {
    if let Some(step) =
        (0..a.losses.len().max(b.losses.len())).find(|&i| a.losses.get(i) != b.losses.get(i))
    {
        let show = |o: &Outcome| {
            o.losses.get(step).map_or("none".into(), |bits| {
                format!("{} ({bits:08x})", f32::from_bits(*bits))
            })
        };
        return Some(format!("step {step}'s loss: {} vs {}", show(a), show(b)));
    }
    if a.params != b.params {
        return Some(format!("final parameters: {} vs {}", a.params, b.params));
    }
    if a.outputs != b.outputs {
        return Some(format!("outputs: {} vs {}", a.outputs, b.outputs));
    }
    None
}

#[cfg(test)]
#[path = "runs_tests.rs"]
mod tests;
