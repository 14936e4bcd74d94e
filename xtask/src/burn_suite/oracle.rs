//! The oracle: every test that passes on CubeCL's engine passes on
//! gpumem's. A test that fails on both is the driver's or the compiler's
//! (lavapipe, naga) and does not count against gpumem.

use std::collections::BTreeSet;

use crate::cubecl_client::table::Row;

/// The suites whose every test must pass on gpumem: the two that test
/// memory management itself.
pub const MUST_PASS: [&str; 2] = ["memory_cleaning", "graph_capture"];

/// What the oracle found, one line per finding.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Tests (or whole binaries) that failed on gpumem and not on CubeCL's
    /// engine, and failures in [`MUST_PASS`] on gpumem.
    pub against_gpumem: Vec<String>,
    /// Tests that failed on both engines.
    pub on_both: Vec<String>,
    /// Binaries compared on both engines.
    pub compared: usize,
}

fn failed(row: &Row) -> BTreeSet<&str> {
    row.outcome.failed.iter().map(|t| t.test.as_str()).collect()
}

/// Reads the rows of one run of the task.
pub fn judge(rows: &[Row]) -> Verdict {
    let mut verdict = Verdict::default();
    let find =
        |suite: &str, engine: &str| rows.iter().find(|r| r.suite == suite && r.engine == engine);
    for ours in rows.iter().filter(|r| r.engine == "gpumem") {
        let suite = ours.suite.as_str();
        let must = MUST_PASS.contains(&suite);
        if must && !ours.green() {
            let why = ours.stopped.as_deref().unwrap_or("tests failed");
            verdict
                .against_gpumem
                .push(format!("{suite}: must pass on gpumem: {why}"));
        }
        let Some(theirs) = find(suite, "cubecl") else {
            continue;
        };
        verdict.compared += 1;
        if let (Some(why), None) = (&ours.stopped, &theirs.stopped) {
            verdict
                .against_gpumem
                .push(format!("{suite}: stopped on gpumem only: {why}"));
        }
        let (mine, base) = (failed(ours), failed(theirs));
        for test in mine.difference(&base) {
            verdict
                .against_gpumem
                .push(format!("{suite}: `{test}` failed on gpumem only"));
        }
        for test in mine.intersection(&base) {
            verdict
                .on_both
                .push(format!("{suite}: `{test}` failed on both engines"));
        }
    }
    verdict
}

impl Verdict {
    /// The lines the task prints after its table.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = self.against_gpumem.clone();
        if self.against_gpumem.is_empty() && self.compared > 0 {
            lines.push(format!(
                "oracle: every test that passed on cubecl passed on gpumem ({} binaries compared; \
                 {} tests failed on both engines)",
                self.compared,
                self.on_both.len()
            ));
        }
        lines
    }
}

#[cfg(test)]
#[path = "oracle_tests.rs"]
mod tests;
