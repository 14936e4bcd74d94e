//! Tests that skipped themselves, made visible.
//!
//! A test that needs a GPU returns early on a machine without one, after
//! printing `skipping: REASON`; `cargo test` counts it as passed and hides
//! what it printed. `ci` and `test` run the test binaries with
//! `--show-output`, which prints every passing test's captured output
//! under `---- NAME stdout ----` in a `successes:` block at the end of each
//! binary's run. [`Scanner`] reads those blocks out of the stream (so the
//! log looks as it did without the flag) and keeps each test whose output
//! has a line starting with `skipping:` (skipped) or `skipping ` (a part of
//! it skipped, e.g. `skipping the device part: …`). [`summary`] turns them
//! into the last lines of the run. Costs nothing measurable: the flag only
//! changes what libtest prints.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::process::{Command, Stdio};

/// A test that skipped itself, or a part of itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// The test's name as libtest prints it.
    pub test: String,
    /// What follows `skipping:` (or the whole line after `skipping ` for a
    /// part).
    pub reason: String,
    /// Only a part of the test was skipped; the rest ran.
    pub partial: bool,
}

/// Reads libtest's `--show-output` stream line by line.
#[derive(Debug, Default)]
pub struct Scanner {
    /// Inside a `successes:` block (captured output of passing tests).
    in_successes: bool,
    /// The test whose output is being read, and whether it already counted.
    current: Option<(String, bool)>,
    /// What was found.
    pub skips: Vec<Skip>,
    /// Tests passed, summed over every `test result:` line.
    pub passed: u64,
}

impl Scanner {
    /// Takes one line (without its newline); returns whether to pass it on
    /// to the log (`false` for the `successes:` blocks `--show-output` adds).
    pub fn line(&mut self, line: &str) -> bool {
        if let Some(rest) = line.strip_prefix("test result: ") {
            // "ok. 3 passed; 0 failed; …"
            let passed = rest.split(". ").nth(1).and_then(|p| p.split(' ').next());
            self.passed += passed.and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        }
        if line.starts_with("test result:") || line == "failures:" {
            self.in_successes = false;
            self.current = None;
            return true;
        }
        if line == "successes:" {
            self.in_successes = true;
            self.current = None;
            return false;
        }
        if !self.in_successes {
            return true;
        }
        if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|rest| rest.strip_suffix(" stdout ----"))
        {
            self.current = Some((name.to_string(), false));
            return false;
        }
        if let (Some((test, counted)), Some(rest)) =
            (self.current.as_mut(), line.strip_prefix("skipping"))
            && !*counted
        {
            let (reason, partial) = match rest.strip_prefix(':') {
                Some(reason) => (reason.trim().to_string(), false),
                None => (line.to_string(), true),
            };
            // A test that prints several lines counts once, by its first.
            *counted = !partial;
            self.skips.push(Skip {
                test: test.clone(),
                reason,
                partial,
            });
        }
        false
    }
}

/// Runs `cmd` (a `cargo test … --` whose test binaries get
/// `--show-output`), passing its output on as it comes, and returns the
/// tests that skipped themselves.
pub fn run_counting_skips(cmd: &mut Command) -> Result<Vec<Skip>, String> {
    run_scanned(cmd).map(|scanner| scanner.skips)
}

/// As [`run_counting_skips`], returning the whole scan (passes counted).
pub fn run_scanned(cmd: &mut Command) -> Result<Scanner, String> {
    cmd.arg("--show-output");
    if std::io::stdout().is_terminal() {
        // Piped, libtest would print without colour.
        cmd.args(["--color", "always"]);
    }
    eprintln!("$ {cmd:?}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start {cmd:?}: {e}"))?;
    let mut scanner = Scanner::default();
    if let Some(stdout) = child.stdout.take() {
        let mut reader = BufReader::new(stdout);
        let mut out = std::io::stdout();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&buf);
            let line = text.trim_end_matches(['\n', '\r']);
            if scanner.line(strip_ansi(line).as_str()) {
                let _ = out.write_all(&buf);
                let _ = out.flush();
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for {cmd:?}: {e}"))?;
    if status.success() {
        Ok(scanner)
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

/// `line` without ANSI colour sequences (`ESC [ … m`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// How many test names a reason lists before "and N more".
const NAMES_SHOWN: usize = 3;

/// The summary lines: how many tests skipped and why, grouped by reason
/// (most frequent first), each with a few of its tests.
pub fn summary(skips: &[Skip]) -> Vec<String> {
    let whole = skips.iter().filter(|s| !s.partial).count();
    let partial = skips.len() - whole;
    if skips.is_empty() {
        return vec!["skipped tests: none (every GPU test ran)".to_string()];
    }
    let mut lines = vec![format!(
        "skipped tests: {whole} (cargo test counts them as passed){}",
        match partial {
            0 => String::new(),
            n => format!(", and {n} ran with a part skipped"),
        }
    )];
    let mut by_reason: BTreeMap<(bool, &str), Vec<&str>> = BTreeMap::new();
    for s in skips {
        by_reason
            .entry((s.partial, s.reason.as_str()))
            .or_default()
            .push(&s.test);
    }
    let mut groups: Vec<_> = by_reason.into_iter().collect();
    groups.sort_by_key(|((partial, _), tests)| (*partial, std::cmp::Reverse(tests.len())));
    // A part's reason is its whole line ("skipping the device part: …").
    for ((_, reason), tests) in groups {
        let mut names = tests[..tests.len().min(NAMES_SHOWN)].join(", ");
        if tests.len() > NAMES_SHOWN {
            names.push_str(&format!(" and {} more", tests.len() - NAMES_SHOWN));
        }
        lines.push(format!("  {:>3} × {reason} ({names})", tests.len()));
    }
    lines
}

#[cfg(test)]
#[path = "skips_tests.rs"]
mod tests;
