//! What one libtest binary's output says: each test's outcome and the run's
//! wall time.
//!
//! libtest prints `test NAME ... ok`, `... FAILED`, `... ignored` or
//! `... ignored, REASON` for every test (one line each with
//! `--test-threads=1`; with more threads a test's own output may interleave,
//! which this reader tolerates: it keeps only lines that start with `test `
//! and end in an outcome), then `test result: … finished in 1.23s`.

/// One test that did not pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unpassed {
    /// The test's name as libtest prints it.
    pub test: String,
    /// The reason an ignored test gives (`#[ignore = "…"]`), if any.
    pub reason: Option<String>,
}

/// One test binary's run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Tests that passed.
    pub passed: usize,
    /// Tests that failed, by name.
    pub failed: Vec<Unpassed>,
    /// Tests libtest ignored, with their reasons.
    pub ignored: Vec<Unpassed>,
    /// Tests that failed in the run and passed when rerun alone (counted in
    /// `passed`).
    pub rerun: Vec<Unpassed>,
    /// Tests a `--skip` filter left out (`N filtered out`).
    pub filtered: usize,
    /// What libtest's `finished in` says, in seconds.
    pub seconds: Option<f64>,
    /// Whether a `test result:` line was seen (the binary ran to its end).
    pub finished: bool,
}

impl Outcome {
    /// Reads one line of the binary's output (without its newline).
    pub fn line(&mut self, line: &str) {
        if let Some(result) = line.strip_prefix("test result: ") {
            self.finished = true;
            self.filtered = result
                .split("; ")
                .find_map(|part| part.strip_suffix(" filtered out"))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0);
            self.seconds = result
                .rsplit_once("finished in ")
                .and_then(|(_, time)| time.trim().strip_suffix('s'))
                .and_then(|secs| secs.parse().ok());
            return;
        }
        let Some(rest) = line.strip_prefix("test ") else {
            return;
        };
        let Some((name, outcome)) = rest.rsplit_once(" ... ") else {
            return;
        };
        let test = name.trim().to_string();
        match outcome.trim() {
            "ok" => self.passed += 1,
            "FAILED" => self.failed.push(Unpassed { test, reason: None }),
            "ignored" => self.ignored.push(Unpassed { test, reason: None }),
            other => {
                if let Some(reason) = other.strip_prefix("ignored, ") {
                    self.ignored.push(Unpassed {
                        test,
                        reason: Some(reason.to_string()),
                    });
                }
            }
        }
    }

    /// Reads a whole output (the tests read canned runs with it).
    #[cfg(test)]
    pub fn parse(text: &str) -> Self {
        let mut outcome = Self::default();
        for line in text.lines() {
            outcome.line(line);
        }
        outcome
    }
}

#[cfg(test)]
#[path = "libtest_tests.rs"]
mod tests;
