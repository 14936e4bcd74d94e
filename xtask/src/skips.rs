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
}

impl Scanner {
    /// Takes one line (without its newline); returns whether to pass it on
    /// to the log (`false` for the `successes:` blocks `--show-output` adds).
    pub fn line(&mut self, line: &str) -> bool {
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
        Ok(scanner.skips)
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
mod tests {
    use super::*;

    /// What `cargo test -- --show-output` prints for one binary.
    const OUTPUT: &str = "\
running 4 tests
test cuda::round_trip ... ok
test cuda::streams ... ok
test host_works ... ok
test cuda::device_part ... ok

successes:

---- cuda::round_trip stdout ----
skipping: the CUDA driver library (libcuda) is not present on this machine

---- cuda::streams stdout ----
skipping: the CUDA driver library (libcuda) is not present on this machine
skipping: the CUDA driver library (libcuda) is not present on this machine

---- host_works stdout ----
allocated 4 pages

---- cuda::device_part stdout ----
skipping the device part: no libcuda on this machine


successes:
    cuda::device_part
    cuda::round_trip
    cuda::streams
    host_works

test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.26s

running 1 test
test no_driver ... ok

successes:

---- no_driver stdout ----
skipping: no CUDA driver on this machine


successes:
    no_driver

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";

    fn scan(text: &str) -> (Scanner, Vec<&str>) {
        let mut scanner = Scanner::default();
        let kept = text.lines().filter(|l| scanner.line(l)).collect();
        (scanner, kept)
    }

    #[test]
    fn skipping_lines_in_the_successes_blocks_count_each_test_once_with_its_reason() {
        let (scanner, _) = scan(OUTPUT);
        let libcuda = "the CUDA driver library (libcuda) is not present on this machine";
        let found: Vec<(&str, &str, bool)> = scanner
            .skips
            .iter()
            .map(|s| (s.test.as_str(), s.reason.as_str(), s.partial))
            .collect();
        assert_eq!(
            found,
            [
                ("cuda::round_trip", libcuda, false),
                ("cuda::streams", libcuda, false),
                (
                    "cuda::device_part",
                    "skipping the device part: no libcuda on this machine",
                    true
                ),
                ("no_driver", "no CUDA driver on this machine", false),
            ]
        );
    }

    #[test]
    fn the_log_keeps_what_it_showed_without_show_output() {
        let (_, kept) = scan(OUTPUT);
        assert!(kept.contains(&"test cuda::round_trip ... ok"));
        assert!(
            kept.iter()
                .any(|l| l.starts_with("test result: ok. 4 passed"))
        );
        assert!(
            kept.iter()
                .any(|l| l.starts_with("test result: ok. 1 passed"))
        );
        assert!(!kept.iter().any(|l| l.contains("skipping")), "{kept:?}");
        assert!(!kept.iter().any(|l| l.contains("successes")), "{kept:?}");
        assert!(!kept.contains(&"allocated 4 pages"));
    }

    #[test]
    fn a_failing_test_output_is_still_shown_and_not_counted() {
        let text = "\
running 1 test
test gpu ... FAILED

successes:

successes:

failures:

---- gpu stdout ----
skipping: not really

failures:
    gpu

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";
        let (scanner, kept) = scan(text);
        assert!(scanner.skips.is_empty());
        assert!(kept.contains(&"skipping: not really"));
        assert!(kept.contains(&"---- gpu stdout ----"));
    }

    #[test]
    fn the_summary_says_how_many_skipped_and_why_most_frequent_first() {
        let (scanner, _) = scan(OUTPUT);
        let lines = summary(&scanner.skips);
        assert_eq!(
            lines[0],
            "skipped tests: 3 (cargo test counts them as passed), and 1 ran with a part skipped"
        );
        assert!(
            lines[1].starts_with("    2 × the CUDA driver library")
                && lines[1].ends_with("(cuda::round_trip, cuda::streams)"),
            "{lines:?}"
        );
        assert_eq!(
            lines[2],
            "    1 × no CUDA driver on this machine (no_driver)"
        );
        assert_eq!(
            lines[3],
            "    1 × skipping the device part: no libcuda on this machine (cuda::device_part)"
        );
        assert_eq!(
            summary(&[]),
            ["skipped tests: none (every GPU test ran)".to_string()]
        );
    }

    #[test]
    fn colour_codes_do_not_hide_a_header() {
        assert_eq!(
            strip_ansi("\u{1b}[32mtest result:\u{1b}[0m ok"),
            "test result: ok"
        );
    }
}
