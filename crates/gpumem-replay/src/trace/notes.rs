//! What a reader noticed about its input: the warnings and notes the
//! command prints to stderr and a `--json` report carries (`input_notes`).

use super::Trace;

/// How much a line of [`input_notes`] matters: a `warning` says the input
/// may not be what the user meant (an empty trace, frees of ids never
/// allocated, actions this reader does not know); a `note` says what was
/// skipped or inferred on purpose, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NoteLevel {
    /// The input may not be what the user meant.
    Warning,
    /// Skipped or inferred on purpose.
    Note,
}

/// One thing the reader noticed about its input, as `--json` reports
/// carry it (`input_notes`) and stderr prints it (`LEVEL: text`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InputNote {
    /// `warning` or `note`.
    pub level: NoteLevel,
    /// What was noticed, and what it means for the report.
    pub text: String,
}

/// What the reader noticed (an empty trace, unknown frees with their
/// locations, actions it skipped without knowing them, records skipped on
/// purpose and why, what a snapshot held besides its events, failed
/// allocations of the recorded run). Locations count from 1, as ops do.
pub fn input_notes(trace: &Trace, source: &str) -> Vec<InputNote> {
    let mut notes = Vec::new();
    let mut push = |level, text: String| notes.push(InputNote { level, text });
    let stats = &trace.stats;
    if trace.events.is_empty() {
        push(
            NoteLevel::Warning,
            format!(
                "{source} holds no events (the file is empty or has only a header); \
                 the report is all zeros"
            ),
        );
    }
    let unit = match stats.unit {
        "" => "event",
        unit => unit,
    };
    if stats.unknown_frees > 0 {
        let places: Vec<String> = stats
            .first_unknown_frees
            .iter()
            .map(|u| format!("id {} at {unit} {}", u.id, u.location))
            .collect();
        push(
            NoteLevel::Warning,
            format!(
                "{} free(s) of ids that were not live were skipped (first: {}); \
                 the trace probably starts mid-run",
                stats.unknown_frees,
                places.join(", ")
            ),
        );
    }
    if !stats.unknown_actions.is_empty() {
        let total: u64 = stats.unknown_actions.values().sum();
        let names: Vec<String> = stats
            .unknown_actions
            .iter()
            .map(|(name, count)| format!("{name:?} ×{count}"))
            .collect();
        push(
            NoteLevel::Warning,
            format!(
                "{total} {unit}(s) with actions this reader does not know were skipped: {}",
                names.join(", ")
            ),
        );
    }
    if !stats.skipped_kinds.is_empty() {
        let kinds: Vec<String> = stats
            .skipped_kinds
            .iter()
            .map(|(kind, count)| format!("{kind} ×{count} ({})", super::why_skipped(kind)))
            .collect();
        push(
            NoteLevel::Note,
            format!(
                "{} {unit}(s) carry nothing to replay and were skipped: {}",
                stats.skipped_kinds.values().sum::<u64>(),
                kinds.join(", ")
            ),
        );
    }
    for note in &stats.notes {
        push(NoteLevel::Note, note.clone());
    }
    if stats.source_failed_allocs > 0 {
        push(
            NoteLevel::Note,
            format!(
                "{} allocation(s) had failed in the recorded run and are not replayed",
                stats.source_failed_allocs
            ),
        );
    }
    notes
}
