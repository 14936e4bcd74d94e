//! The memory scenarios users reported (`xtask/burn-client/src/scenarios.rs`),
//! one process per scenario and engine: what Burn's allocator says it holds
//! at each of the scenario's points, and the main memory's wgpu buffers
//! over the process, side by side.

use std::path::Path;
use std::process::Command;

use crate::cubecl_client::engine::Engine;

use super::runs::set_private;
use crate::cubecl_client::scratch::write;

/// The scenarios, in the order they run (the binary's names).
pub const SCENARIOS: [&str; 4] = ["big-tensor", "cleanup-loop", "drop", "inference-loop"];

/// What Burn's `memory_pool_usage` and the process said at one point.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Usage {
    pub in_use: u64,
    pub reserved: u64,
    pub rss: u64,
}

/// One scenario on one engine.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Outcome {
    /// The points, labelled, in the order the scenario reached them.
    pub points: Vec<(String, Usage)>,
    /// The main memory's wgpu buffers: peak bytes, created, destroyed, and
    /// bytes still held when the process exited.
    pub peak_bytes: u64,
    pub created: u64,
    pub destroyed: u64,
    pub held_at_exit: u64,
}

/// Runs `scenario` on `engine` with the binary at `binary`.
pub fn execute(
    binary: &Path,
    dir: &Path,
    scenario: &str,
    engine: Engine,
) -> Result<Outcome, String> {
    let counts = dir.join(format!("counts-scenario-{scenario}-{}.txt", engine.name()));
    let _ = std::fs::remove_file(&counts);
    let runtime = dir.join("xdg-runtime");
    write(&runtime.join(".keep"), "")?;
    set_private(&runtime);
    let mut cmd = Command::new(binary);
    cmd.args(["scenario", scenario])
        .env("GPUMEM_CUBECL_ENGINE", engine.name())
        .env("GPUMEM_CUBECL_COUNTS", &counts)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env_remove("GPUMEM_TRACE");
    eprintln!("$ {cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| format!("could not start {}: {e}", binary.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "scenario {scenario} on {} failed with {}:\n{stdout}\n{}",
            engine.name(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut outcome = parse_points(&stdout)?;
    let totals = std::fs::read_to_string(&counts)
        .map_err(|e| format!("no buffer totals at {}: {e}", counts.display()))?;
    parse_totals(&totals, &mut outcome)?;
    Ok(outcome)
}

/// The binary's `point LABEL IN_USE RESERVED RSS` lines.
pub fn parse_points(text: &str) -> Result<Outcome, String> {
    let mut outcome = Outcome::default();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let ["point", label, in_use, reserved, rss] = fields.as_slice() {
            let number = |s: &str| {
                s.parse::<u64>()
                    .map_err(|_| format!("cannot read the point {line:?}"))
            };
            let usage = Usage {
                in_use: number(in_use)?,
                reserved: number(reserved)?,
                rss: number(rss)?,
            };
            outcome.points.push((label.to_string(), usage));
        }
    }
    if outcome.points.is_empty() {
        return Err(format!("the scenario printed no point:\n{text}"));
    }
    Ok(outcome)
}

/// The patched storage's totals into `outcome`.
pub fn parse_totals(text: &str, outcome: &mut Outcome) -> Result<(), String> {
    use super::runs::buffer_total;
    outcome.peak_bytes = buffer_total(text, "peak_bytes ")?;
    outcome.created = buffer_total(text, "buffers_created ")?;
    outcome.destroyed = buffer_total(text, "buffers_destroyed ")?;
    outcome.held_at_exit = buffer_total(text, "held_at_exit ")?;
    Ok(())
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// Below this many bytes in use, reserved ÷ in use says nothing (a dropped
/// tensor leaves a few bytes of metadata in use).
const RATIO_FLOOR: u64 = 4 << 10;

/// `reserved (reserved ÷ in use ×)`, the ratio left out when (next to)
/// nothing is in use.
fn reserved(usage: &Usage) -> String {
    if usage.in_use < RATIO_FLOOR {
        mib(usage.reserved)
    } else {
        format!(
            "{} ({:.2} ×)",
            mib(usage.reserved),
            usage.reserved as f64 / usage.in_use as f64
        )
    }
}

/// The two tables in Markdown: per scenario and point, each engine's bytes
/// in use, reserved (÷ in use) and resident set; then per scenario and
/// engine, the main memory's wgpu buffers.
pub fn render(rows: &[(&str, Engine, Outcome)]) -> String {
    let engines: Vec<Engine> = {
        let mut seen = Vec::new();
        for (_, engine, _) in rows {
            if !seen.contains(engine) {
                seen.push(*engine);
            }
        }
        seen
    };
    let mut out = String::from("| scenario | point |");
    let mut rule = String::from("|---|---|");
    for engine in &engines {
        let e = engine.name();
        out.push_str(&format!(
            " {e}: in use | {e}: reserved | {e}: process RSS |"
        ));
        rule.push_str("---:|---:|---:|");
    }
    out.push('\n');
    out.push_str(&rule);
    out.push('\n');
    let mut scenarios: Vec<&str> = Vec::new();
    for (scenario, _, _) in rows {
        if !scenarios.contains(scenario) {
            scenarios.push(scenario);
        }
    }
    for scenario in &scenarios {
        let of = |engine: Engine| {
            rows.iter()
                .find(|(s, e, _)| s == scenario && *e == engine)
                .map(|(_, _, o)| o)
        };
        let Some(first) = engines.iter().find_map(|&e| of(e)) else {
            continue;
        };
        for (i, (label, _)) in first.points.iter().enumerate() {
            out.push_str(&format!("| {scenario} | {label} |"));
            for &engine in &engines {
                match of(engine).and_then(|o| o.points.get(i)) {
                    Some((_, usage)) => out.push_str(&format!(
                        " {} | {} | {} |",
                        mib(usage.in_use),
                        reserved(usage),
                        mib(usage.rss)
                    )),
                    None => out.push_str(" — | — | — |"),
                }
            }
            out.push('\n');
        }
    }
    out.push_str(
        "\n| scenario | engine | peak bytes in wgpu buffers | buffers created | buffers destroyed | held at exit |\n\
         |---|---|---:|---:|---:|---:|\n",
    );
    for (scenario, engine, o) in rows {
        out.push_str(&format!(
            "| {scenario} | {} | {} | {} | {} | {} |\n",
            engine.name(),
            mib(o.peak_bytes),
            o.created,
            o.destroyed,
            mib(o.held_at_exit)
        ));
    }
    out
}

#[cfg(test)]
#[path = "scenarios_tests.rs"]
mod tests;
