//! Traces: the event model, its readers (gpumem JSONL, RMM CSV, PyTorch
//! snapshots) and the JSONL writer.
//!
//! Every reader returns a whole [`Trace`] before replay starts, so parsing
//! never counts toward the replay's time. Text readers stream line by line;
//! malformed input is a [`CliError::Parse`] naming the line or record.

mod event;
mod jsonl;
mod pytorch;
mod rmm_csv;
mod sink;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

pub use event::{Event, MAX_TRACE_SIZE, Mode, ReadStats, Trace, UNKNOWN_FREES_KEPT, UnknownFree};
pub use jsonl::{FORMAT_NAME, FORMAT_VERSION, read_jsonl, write_jsonl};
pub use pytorch::read_pytorch;
pub use rmm_csv::read_rmm_csv;

use crate::error::{CliError, Result};

/// Input format of a trace file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// Decide from the extension, then from the first bytes.
    Auto,
    /// gpumem JSON Lines.
    Jsonl,
    /// RMM logging-adaptor CSV.
    RmmCsv,
    /// PyTorch memory snapshot pickle.
    Pytorch,
}

/// Picks a format from a file name and its first bytes.
pub fn detect_format(path: &Path, head: &[u8]) -> Result<TraceFormat> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("jsonl" | "ndjson" | "json") => return Ok(TraceFormat::Jsonl),
        Some("csv") => return Ok(TraceFormat::RmmCsv),
        Some("pickle" | "pkl") => return Ok(TraceFormat::Pytorch),
        _ => {}
    }
    // Pickle protocol 2+ starts with PROTO (0x80); text formats by first character.
    let text = String::from_utf8_lossy(head);
    let first = text.trim_start();
    if head.first() == Some(&0x80) {
        Ok(TraceFormat::Pytorch)
    } else if first.starts_with('{') {
        Ok(TraceFormat::Jsonl)
    } else if first.to_ascii_lowercase().starts_with("thread")
        || first.chars().next().is_some_and(|c| c.is_ascii_digit())
    {
        Ok(TraceFormat::RmmCsv)
    } else {
        Err(CliError::UnknownFormat {
            path: path.to_path_buf(),
            reason: if head.is_empty() {
                "the file is empty".to_string()
            } else {
                "it starts like none of JSON Lines, RMM CSV or a pickle".to_string()
            },
        })
    }
}

/// Reads a trace file in `format` (detected when [`TraceFormat::Auto`]).
pub fn read_trace_file(path: &Path, format: TraceFormat) -> Result<Trace> {
    let open = || {
        File::open(path).map_err(|source| CliError::Open {
            path: path.to_path_buf(),
            source,
        })
    };
    let format = match format {
        TraceFormat::Auto => {
            let mut head = Vec::with_capacity(64);
            open()?
                .take(64)
                .read_to_end(&mut head)
                .map_err(|source| CliError::Io {
                    what: path.display().to_string(),
                    source,
                })?;
            detect_format(path, &head)?
        }
        known => known,
    };
    let reader = BufReader::with_capacity(1 << 16, open()?);
    match format {
        TraceFormat::Jsonl | TraceFormat::Auto => read_jsonl(reader),
        TraceFormat::RmmCsv => read_rmm_csv(reader),
        TraceFormat::Pytorch => read_pytorch(reader, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detect(name: &str, head: &[u8]) -> Result<TraceFormat> {
        detect_format(Path::new(name), head)
    }

    #[test]
    fn the_extension_decides_first() {
        assert_eq!(detect("a.jsonl", b"").unwrap(), TraceFormat::Jsonl);
        assert_eq!(detect("a.CSV", b"{").unwrap(), TraceFormat::RmmCsv);
        assert_eq!(detect("snap.pickle", b"").unwrap(), TraceFormat::Pytorch);
        assert_eq!(detect("snap.pkl", b"").unwrap(), TraceFormat::Pytorch);
    }

    #[test]
    fn without_a_known_extension_the_first_bytes_decide() {
        assert_eq!(detect("t", b"\x80\x04\x95").unwrap(), TraceFormat::Pytorch);
        assert_eq!(detect("t", b"  {\"op\":").unwrap(), TraceFormat::Jsonl);
        assert_eq!(detect("t", b"Thread,Time").unwrap(), TraceFormat::RmmCsv);
        assert_eq!(
            detect("t.log", b"140573,12:00").unwrap(),
            TraceFormat::RmmCsv
        );
    }

    #[test]
    fn an_empty_or_unrecognized_file_asks_for_a_format() {
        let empty = detect("t", b"").unwrap_err().to_string();
        assert!(
            empty.contains("empty") && empty.contains("--format"),
            "{empty}"
        );
        let other = detect("t", b"hello").unwrap_err().to_string();
        assert!(other.contains("none of"), "{other}");
    }
}
