//! The side-by-side table: one row per suite and engine.

use super::libtest::{Outcome, Unpassed};

/// The main memory's wgpu buffers over one test binary's run, as the
/// patched cubecl-wgpu writes them at exit (`GPUMEM_CUBECL_COUNTS`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// The most bytes held in the main memory's buffers at once.
    pub peak_bytes: u64,
    /// Buffers the main memory created.
    pub buffers_created: u64,
}

impl Counts {
    /// Reads the `key value` lines; `None` when a key is missing.
    pub fn parse(text: &str) -> Option<Self> {
        let value = |key: &str| {
            text.lines()
                .filter_map(|line| line.split_once(' '))
                .find(|(k, _)| *k == key)
                .and_then(|(_, v)| v.trim().parse().ok())
        };
        Some(Self {
            peak_bytes: value("peak_bytes")?,
            buffers_created: value("buffers_created")?,
        })
    }
}

/// One suite on one engine.
#[derive(Debug, Clone)]
pub struct Row {
    /// The suite's name.
    pub suite: String,
    /// The engine's name, or `—` for a suite the switch does not reach.
    pub engine: String,
    /// What libtest said.
    pub outcome: Outcome,
    /// The `--skip` filters that left tests out on purpose (see
    /// `suites::LEFT_OUT`), with reasons.
    pub left_out: Vec<Unpassed>,
    /// The main memory's buffers; `None` when no wgpu buffer was created.
    pub counts: Option<Counts>,
    /// Set when the binary stopped before its result line.
    pub stopped: Option<String>,
}

impl Row {
    /// Tests skipped: those libtest ignored and those the filters left out.
    pub fn skipped(&self) -> usize {
        self.outcome.ignored.len() + self.outcome.filtered
    }

    /// Whether the row is green.
    pub fn green(&self) -> bool {
        self.outcome.failed.is_empty() && self.stopped.is_none()
    }
}

/// `bytes` in MiB with two decimals, or the exact bytes below 1 MiB.
fn bytes(bytes: u64) -> String {
    if bytes < 1 << 20 {
        format!("{bytes} B")
    } else {
        format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

/// The table in Markdown, then every test that did not pass, with reasons.
pub fn render(rows: &[Row]) -> String {
    let mut out = String::from(
        "| suite | engine | passed | failed | skipped | peak bytes in wgpu buffers | buffers created | wall time |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let (peak, created) = match row.counts {
            Some(c) => (bytes(c.peak_bytes), c.buffers_created.to_string()),
            None => ("—".to_string(), "—".to_string()),
        };
        let wall = row
            .outcome
            .seconds
            .map_or("—".to_string(), |s| format!("{s:.1} s"));
        let failed = match &row.stopped {
            Some(_) => format!("{} + stopped", row.outcome.failed.len()),
            None => row.outcome.failed.len().to_string(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {failed} | {} | {peak} | {created} | {wall} |\n",
            row.suite,
            row.engine,
            row.outcome.passed,
            row.skipped(),
        ));
    }
    let mut notes = Vec::new();
    for row in rows {
        let at = format!("{} on {}", row.suite, row.engine);
        if let Some(why) = &row.stopped {
            notes.push(format!("- stopped: {at}: {why}"));
        }
        for t in &row.outcome.failed {
            notes.push(format!("- failed: {at}: `{}`", t.test));
        }
        for t in &row.outcome.rerun {
            notes.push(format!(
                "- failed in the run, passed rerun alone: {at}: `{}`",
                t.test
            ));
        }
        for t in &row.outcome.ignored {
            let why = t.reason.as_deref().unwrap_or("#[ignore] without a reason");
            notes.push(format!("- skipped (#[ignore]): {at}: `{}`: {why}", t.test));
        }
        for t in &row.left_out {
            let why = t.reason.as_deref().unwrap_or("");
            notes.push(format!(
                "- left out: {at}: tests matching `{}`: {why}",
                t.test
            ));
        }
    }
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes.join("\n"));
        out.push('\n');
    }
    out
}

/// One line per suite where gpumem held more bytes at peak than CubeCL's
/// engine (the bar: never more), or one line saying there is none.
pub fn held_more(rows: &[Row]) -> Vec<String> {
    let peak = |suite: &str, engine: &str| {
        rows.iter()
            .find(|r| r.suite == suite && r.engine == engine)
            .and_then(|r| r.counts)
            .map(|c| c.peak_bytes)
    };
    let mut lines = Vec::new();
    let mut compared = 0;
    for row in rows.iter().filter(|r| r.engine == "gpumem") {
        let (Some(ours), Some(theirs)) = (peak(&row.suite, "gpumem"), peak(&row.suite, "cubecl"))
        else {
            continue;
        };
        compared += 1;
        if ours > theirs {
            lines.push(format!(
                "gpumem held more than CubeCL's engine on {}: {} against {}",
                row.suite,
                bytes(ours),
                bytes(theirs)
            ));
        }
    }
    if lines.is_empty() && compared > 0 {
        lines.push(format!(
            "gpumem held no more than CubeCL's engine on each of the {compared} suites compared"
        ));
    }
    lines
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
