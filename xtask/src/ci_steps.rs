//! What `cargo xtask ci` ran, step by step, for its summary: a step either
//! passed or was skipped with a reason, and the summary's "passed:" line
//! lists only the steps that passed (a skipped step is never reported as
//! passed, however it is named).

/// How one step ended (a failing step stops the run before the summary).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and passed.
    Passed,
    /// It did not run; the reason says why.
    Skipped(String),
}

/// The steps of one run, in order, and the notes to print under them.
#[derive(Debug, Default)]
pub struct Steps {
    steps: Vec<(&'static str, Outcome)>,
    notes: Vec<String>,
}

impl Steps {
    /// `name` passed.
    pub fn passed(&mut self, name: &'static str) {
        self.steps.push((name, Outcome::Passed));
    }

    /// `name` was skipped because of `why`.
    pub fn skipped(&mut self, name: &'static str, why: impl Into<String>) {
        self.steps.push((name, Outcome::Skipped(why.into())));
    }

    /// A line to print under the summary that is no step's outcome.
    pub fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    /// The summary's title: the steps that passed, then those skipped.
    pub fn title(&self) -> String {
        let named = |passed: bool| -> Vec<&str> {
            self.steps
                .iter()
                .filter(|(_, o)| matches!(o, Outcome::Passed) == passed)
                .map(|(name, _)| *name)
                .collect()
        };
        let (passed, skipped) = (named(true), named(false));
        let mut title = format!("ci summary: passed: {}", passed.join(", "));
        if !skipped.is_empty() {
            title.push_str(&format!("; skipped: {}", skipped.join(", ")));
        }
        title
    }

    /// The lines under the title: each skipped step with its reason, then
    /// the notes.
    pub fn notes(&self) -> Vec<String> {
        let skips = self.steps.iter().filter_map(|(name, o)| match o {
            Outcome::Skipped(why) => Some(format!("skipped {name}: {why}")),
            Outcome::Passed => None,
        });
        skips.chain(self.notes.iter().cloned()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skipped_step_is_listed_as_skipped_with_its_reason_never_as_passed() {
        let mut steps = Steps::default();
        steps.passed("fmt");
        steps.passed("tests (the docs' commands included)");
        steps.skipped(
            "HTML check",
            "no Chromium (apt-get install chromium, or set CHROMIUM)",
        );
        steps.skipped("miri", "no nightly toolchain with miri on this machine");
        steps.note("layout: 0 finding(s)".to_string());
        let title = steps.title();
        assert_eq!(
            title,
            "ci summary: passed: fmt, tests (the docs' commands included); skipped: HTML check, miri"
        );
        let passed = title
            .strip_prefix("ci summary: passed: ")
            .and_then(|rest| rest.split("; skipped").next())
            .unwrap();
        assert!(!passed.contains("HTML"), "{passed}");
        assert_eq!(
            steps.notes(),
            [
                "skipped HTML check: no Chromium (apt-get install chromium, or set CHROMIUM)",
                "skipped miri: no nightly toolchain with miri on this machine",
                "layout: 0 finding(s)",
            ]
        );
    }

    #[test]
    fn a_run_where_everything_passed_has_no_skipped_part() {
        let mut steps = Steps::default();
        steps.passed("fmt");
        steps.passed("clippy");
        assert_eq!(steps.title(), "ci summary: passed: fmt, clippy");
        assert!(steps.notes().is_empty());
    }
}
