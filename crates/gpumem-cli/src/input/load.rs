//! Turning a [`Source`](super::Source) into a trace, and warnings about it.

use std::io::Write;

use super::InputArgs;
use crate::error::{CliError, Result};
use crate::trace::{Trace, read_trace_file_on};
use crate::workload::WorkloadSpec;

/// Loads the events `input` names; returns the trace and a display name.
pub fn load_input(input: &InputArgs) -> Result<(Trace, String)> {
    if let Some(workload) = input.source.workload {
        let spec = WorkloadSpec {
            seed: input.seed,
            scale: input.scale,
        };
        let trace = workload.generate_trace(&spec)?;
        return Ok((trace, workload.name().to_string()));
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
    let trace = read_trace_file_on(path, input.format, input.device)?;
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
    if !stats.skipped_kinds.is_empty() {
        let kinds: Vec<String> = stats
            .skipped_kinds
            .iter()
            .map(|(kind, count)| format!("{kind} ×{count} ({})", crate::trace::why_skipped(kind)))
            .collect();
        writeln!(
            err,
            "note: {} {unit}(s) carry nothing to replay and were skipped: {}",
            stats.skipped_kinds.values().sum::<u64>(),
            kinds.join(", ")
        )?;
    }
    for note in &stats.notes {
        writeln!(err, "note: {note}")?;
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
