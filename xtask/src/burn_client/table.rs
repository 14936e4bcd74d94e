//! The side-by-side table: per run and engine, the steps, the peak bytes in
//! the main memory's wgpu buffers, the buffers created and destroyed, the
//! steps per second, and gpumem ÷ CubeCL for each.

use crate::cubecl_client::engine::Engine;

use super::runs::{Outcome, Run};

/// One run on one engine.
#[derive(Debug, Clone)]
pub struct Row {
    pub run: Run,
    pub engine: Engine,
    pub outcome: Outcome,
}

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64)
}

fn ratio(gpumem: f64, cubecl: f64) -> String {
    if cubecl == 0.0 {
        "—".into()
    } else {
        format!("{:.3}", gpumem / cubecl)
    }
}

/// The table in Markdown, with a ratio row under each run that ran on both.
pub fn render(rows: &[Row]) -> String {
    let mut out = String::from(
        "| run | engine | steps | peak bytes in wgpu buffers | buffers created | buffers destroyed | steps/s |\n\
         |---|---|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let o = &row.outcome;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {:.2} |\n",
            row.run.title,
            row.engine.name(),
            o.losses.len(),
            mib(o.peak_bytes),
            o.created,
            o.destroyed,
            o.steps_per_second(),
        ));
        if let Some((c, g)) = pair(rows, row) {
            out.push_str(&format!(
                "| {} | gpumem ÷ cubecl | | {} | {} | {} | {} |\n",
                row.run.title,
                ratio(g.peak_bytes as f64, c.peak_bytes as f64),
                ratio(g.created as f64, c.created as f64),
                ratio(g.destroyed as f64, c.destroyed as f64),
                ratio(g.steps_per_second(), c.steps_per_second()),
            ));
        }
    }
    out
}

/// Both engines' outcomes of `row`'s run, when `row` is the later of the
/// two (so that the ratio row follows both).
fn pair<'a>(rows: &'a [Row], row: &Row) -> Option<(&'a Outcome, &'a Outcome)> {
    let find = |engine| {
        rows.iter()
            .position(|r| r.run.name == row.run.name && r.engine == engine)
    };
    let (c, g) = (find(Engine::Cubecl)?, find(Engine::Gpumem)?);
    let last = c.max(g);
    std::ptr::eq(&rows[last], row).then(|| (&rows[c].outcome, &rows[g].outcome))
}

/// Runs where gpumem held more bytes at peak than CubeCL's engine.
pub fn held_more(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter_map(|row| {
            let (c, g) = pair(rows, row)?;
            (g.peak_bytes > c.peak_bytes).then(|| {
                format!(
                    "gpumem held more than CubeCL's engine at peak on {}: {} vs {}",
                    row.run.name,
                    mib(g.peak_bytes),
                    mib(c.peak_bytes)
                )
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
