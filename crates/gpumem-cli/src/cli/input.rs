//! Turning a [`Source`](super::Source) into a trace, and warnings about it.

use std::io::Write;
use std::path::Path;

use mem_pools::MemoryConfiguration;

use super::InputArgs;
use crate::error::{CliError, Result};
use crate::layout::parse_layout;
use crate::trace::{Trace, read_trace_file};
use crate::workload::WorkloadSpec;

/// Loads the events `input` names; returns the trace and a display name.
pub fn load_input(input: &InputArgs) -> Result<(Trace, String)> {
    if let Some(workload) = input.source.workload {
        let spec = WorkloadSpec {
            seed: input.seed,
            scale: input.scale,
        };
        let events = workload.generate(&spec)?;
        return Ok((Trace::from_events(events), workload.name().to_string()));
    }
    let path = input
        .source
        .trace
        .as_ref()
        .ok_or_else(|| CliError::InvalidArgument {
            option: "TRACE",
            value: "(none)".to_string(),
            reason: "give a trace file or --workload NAME".to_string(),
        })?;
    let trace = read_trace_file(path, input.format)?;
    Ok((trace, path.display().to_string()))
}

/// Writes what the reader noticed (an empty trace, unknown frees with their
/// locations, actions it skipped without knowing them, failed allocations of
/// the recorded run) as warnings. Locations count from 1, as ops do.
pub(crate) fn warn_about(trace: &Trace, source: &str, err: &mut dyn Write) -> std::io::Result<()> {
    let stats = &trace.stats;
    if trace.events.is_empty() {
        writeln!(
            err,
            "warning: {source} holds no events (the file is empty or has only a header); \
             the report is all zeros"
        )?;
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
        writeln!(
            err,
            "warning: {} free(s) of ids that were not live were skipped (first: {}); \
             the trace probably starts mid-run",
            stats.unknown_frees,
            places.join(", ")
        )?;
    }
    if !stats.unknown_actions.is_empty() {
        let total: u64 = stats.unknown_actions.values().sum();
        let names: Vec<String> = stats
            .unknown_actions
            .iter()
            .map(|(name, count)| format!("{name:?} ×{count}"))
            .collect();
        writeln!(
            err,
            "warning: {total} {unit}(s) with actions this reader does not know were skipped: {}",
            names.join(", ")
        )?;
    }
    if stats.source_failed_allocs > 0 {
        writeln!(
            err,
            "note: {} allocation(s) had failed in the recorded run and are not replayed",
            stats.source_failed_allocs
        )?;
    }
    Ok(())
}

/// What a `--config` value that names no file was meant as.
#[derive(Debug, PartialEq, Eq)]
enum ConfigValue {
    /// A file name: it ends in `.json` or `.txt`, starts like a path
    /// (`/`, `.`, `~`), has a `/` before any `:`, or a `.` before its
    /// first `:` (pool kinds are plain words; `sliced:8MiB/64KiB` is a
    /// layout).
    Path,
    /// One word that is not a layout keyword: a file name or a misspelt
    /// layout.
    Word,
    /// A layout (a keyword or `kind:` pools).
    Layout,
}

fn classify(value: &str) -> ConfigValue {
    let v = value.trim();
    let lower = v.to_ascii_lowercase();
    let before_colon = v.split(':').next().unwrap_or("");
    if lower.ends_with(".json")
        || lower.ends_with(".txt")
        || v.starts_with(['/', '.', '~'])
        || before_colon.contains(['/', '\\'])
        || (v.contains(':') && before_colon.contains('.'))
    {
        ConfigValue::Path
    } else if !v.contains(':') && !v.is_empty() && !LAYOUT_KEYWORDS.contains(&v) {
        ConfigValue::Word
    } else {
        ConfigValue::Layout
    }
}

/// The layouts `--config` names by a word.
const LAYOUT_KEYWORDS: [&str; 3] = ["arenas", "sub-slices", "exclusive-pages"];

/// The pool layout `--config` names: a layout written inline, or a file
/// holding one — either as text or as `gpumem plan --json` output (its
/// `config` field), so a measured plan replays as printed. A value that
/// looks like a file name and names none is "file not found".
pub fn load_layout(value: &str) -> Result<MemoryConfiguration> {
    let path = Path::new(value);
    if !path.is_file() {
        let not_found = |hint: String| CliError::FileNotFound {
            option: "--config",
            path: path.to_path_buf(),
            hint,
        };
        return match classify(value) {
            _ if path.exists() => parse_layout(value),
            ConfigValue::Path => Err(not_found(String::new())),
            ConfigValue::Word => match parse_layout(value) {
                Err(CliError::InvalidArgument { reason, .. }) => {
                    Err(not_found(format!("; nor is it a layout: {reason}")))
                }
                other => other,
            },
            ConfigValue::Layout => parse_layout(value),
        };
    }
    let text = std::fs::read_to_string(path).map_err(|source| CliError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let text = text.trim_start_matches('\u{feff}');
    let refuse = |reason: &str| CliError::InvalidArgument {
        option: "--config",
        value: value.to_string(),
        reason: reason.to_string(),
    };
    let json = serde_json::from_str::<serde_json::Value>(text);
    let named_json = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    match json {
        Ok(serde_json::Value::Object(json)) => match json.get("config").and_then(|c| c.as_str()) {
            Some(layout) => parse_layout(layout),
            None => Err(refuse(
                "the file is a JSON object without a \"config\" string; write it with \
                 `gpumem plan --json`, or put a layout such as `arenas` in it",
            )),
        },
        Ok(serde_json::Value::String(layout)) => parse_layout(&layout),
        Ok(other) => Err(refuse(&format!(
            "the file holds a JSON {}, not an object with a \"config\" string; write it with \
             `gpumem plan --json`, or put a layout such as `arenas` in a text file",
            json_kind(&other)
        ))),
        _ if named_json => Err(refuse(
            "the file is named .json but is not JSON; write it with `gpumem plan --json`, \
             or put a layout such as `arenas` in a text file",
        )),
        _ => parse_layout(text),
    }
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "boolean",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}
