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

/// Writes what the reader noticed (unknown frees with their locations,
/// failed allocations of the recorded run) as warnings.
pub(crate) fn warn_about(trace: &Trace, err: &mut dyn Write) -> std::io::Result<()> {
    let stats = &trace.stats;
    if stats.unknown_frees > 0 {
        let places: Vec<String> = stats
            .first_unknown_frees
            .iter()
            .map(|u| format!("id {} at {}", u.id, u.location))
            .collect();
        writeln!(
            err,
            "warning: {} free(s) of ids that were not live were skipped (first: {}); \
             the trace probably starts mid-run",
            stats.unknown_frees,
            places.join(", ")
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

/// The pool layout `--config` names: a layout written inline, or a file
/// holding one — either as text or as `gpumem plan --json` output (its
/// `config` field), so a measured plan replays as printed.
pub fn load_layout(value: &str) -> Result<MemoryConfiguration> {
    let path = Path::new(value);
    if !path.is_file() {
        return parse_layout(value);
    }
    let text = std::fs::read_to_string(path).map_err(|source| CliError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(json) => match json.get("config").and_then(|c| c.as_str()) {
            Some(layout) => parse_layout(layout),
            None => Err(CliError::InvalidArgument {
                option: "--config",
                value: value.to_string(),
                reason: "the file is JSON without a \"config\" string; write it with \
                         `gpumem plan --json`, or put a layout such as `sub-slices` in it"
                    .to_string(),
            }),
        },
        Err(_) => parse_layout(&text),
    }
}
