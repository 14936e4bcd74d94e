//! Turning a [`Source`](super::Source) into a trace, and the warnings
//! about it on stderr.

use std::io::Write;

use gpumem_replay::trace::{InputNote, NoteLevel, Trace, input_notes, read_trace_file_on};
use gpumem_replay::workload::WorkloadSpec;

use super::InputArgs;
use crate::{CliError, Result};

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

/// Writes [`input_notes`] to `err`, one `warning: ...` or `note: ...` line
/// each.
pub(crate) fn warn_about(trace: &Trace, source: &str, err: &mut dyn Write) -> std::io::Result<()> {
    write_notes(&input_notes(trace, source), err)
}

/// Writes `notes` to `err`, one `warning: ...` or `note: ...` line each
/// (for a command that also puts them in its JSON).
pub(crate) fn write_notes(notes: &[InputNote], err: &mut dyn Write) -> std::io::Result<()> {
    for note in notes {
        let level = match note.level {
            NoteLevel::Warning => "warning",
            NoteLevel::Note => "note",
        };
        writeln!(err, "{level}: {}", note.text)?;
    }
    Ok(())
}
