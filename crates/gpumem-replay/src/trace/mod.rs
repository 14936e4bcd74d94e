//! Traces: the event model, its readers (gpumem JSONL, RMM CSV, PyTorch
//! snapshots) and the JSONL writer. Any of them may be gzip-compressed
//! (`traces/*.jsonl.gz`): [`read_trace_file`] decompresses while reading.
//!
//! Every reader returns a whole [`Trace`] before replay starts, so parsing
//! never counts toward the replay's time. Text readers stream line by line;
//! malformed input is a [`ReplayError::Parse`] naming the line or record.

mod autograd;
mod event;
mod frames;
mod jsonl;
mod jsonl_messages;
mod notes;
mod origin;
mod pickle;
mod pytorch;
mod pytorch_blocks;
mod pytorch_context;
mod pytorch_frames;
mod pytorch_segments;
mod rmm_csv;
mod sink;
mod stacks;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use flate2::bufread::MultiGzDecoder;

pub use event::{
    Event, MAX_TRACE_SIZE, Mode, PreExisting, ReadStats, Trace, UNKNOWN_ACTIONS_KEPT,
    UNKNOWN_FREES_KEPT, UnknownFree,
};
pub use frames::GroupBy;
pub use jsonl::{FORMAT_NAME, FORMAT_VERSION, read_jsonl, write_jsonl, write_trace_jsonl};
pub use notes::{InputNote, NoteLevel, input_notes};
pub use origin::Origins;
pub use pytorch::{BEFORE_RECORDING, read_pytorch, why_skipped};
pub use rmm_csv::read_rmm_csv;
pub use stacks::{PassSide, StackFrame, Stacks};

use crate::error::{ReplayError, Result};

/// Input format of a trace file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TraceFormat {
    /// Decide from the extension, then from the first bytes (of a gzip
    /// file: `.gz` dropped from the name, the decompressed bytes).
    Auto,
    /// gpumem JSON Lines.
    Jsonl,
    /// RMM logging-adaptor CSV.
    RmmCsv,
    /// PyTorch memory snapshot pickle.
    Pytorch,
}

/// First two bytes of every gzip member (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Column names an RMM CSV header may start with (columns in any order).
const CSV_COLUMNS: [&str; 6] = ["thread", "time", "action", "pointer", "size", "stream"];

/// How many leading bytes format detection looks at.
const HEAD_LEN: u64 = 64;

/// Picks a format from a file name and its first bytes.
pub fn detect_format(path: &Path, head: &[u8]) -> Result<TraceFormat> {
    detect_named(path, path, head)
}

/// [`detect_format`] deciding by `name`'s extension (for `a.jsonl.gz`, the
/// name without `.gz`) and reporting `path` when nothing matches.
fn detect_named(name: &Path, path: &Path, head: &[u8]) -> Result<TraceFormat> {
    let ext = name
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("jsonl" | "ndjson" | "json") => return Ok(TraceFormat::Jsonl),
        Some("csv") => return Ok(TraceFormat::RmmCsv),
        Some("pickle" | "pkl") => return Ok(TraceFormat::Pytorch),
        _ => {}
    }
    // Pickle protocol 2+ starts with PROTO (0x80); text formats by first
    // character, after a UTF-8 byte order mark.
    let text = String::from_utf8_lossy(head);
    let first = text.trim_start_matches('\u{feff}').trim_start();
    let lower = first.to_ascii_lowercase();
    if head.first() == Some(&0x80) {
        Ok(TraceFormat::Pytorch)
    } else if first.starts_with('{') {
        Ok(TraceFormat::Jsonl)
    } else if CSV_COLUMNS.iter().any(|c| lower.starts_with(c))
        || first.chars().next().is_some_and(|c| c.is_ascii_digit())
    {
        Ok(TraceFormat::RmmCsv)
    } else if first.is_empty() && !head.is_empty() {
        // Blank text reads as an empty trace in any text format.
        Ok(TraceFormat::Jsonl)
    } else {
        Err(ReplayError::UnknownFormat {
            path: path.to_path_buf(),
            reason: if head.is_empty() {
                "the file is empty".to_string()
            } else {
                "it starts like none of JSON Lines, RMM CSV or a pickle".to_string()
            },
        })
    }
}

/// Whether a file is gzip-compressed: its name ends in `.gz` or its first
/// bytes are the gzip magic. A `.gz` name on data that is not gzip is then
/// refused by the decoder as [`ReplayError::Gzip`] rather than misread.
pub fn is_gzip(path: &Path, head: &[u8]) -> bool {
    head.starts_with(&GZIP_MAGIC)
        || path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

/// Reads a trace file in `format` (detected when [`TraceFormat::Auto`]).
/// Gzip-compressed files (`.gz`, or the gzip magic bytes) are decompressed
/// while reading, whatever the format; for detection `a.jsonl.gz` counts as
/// `a.jsonl` and the first decompressed bytes as its head.
pub fn read_trace_file(path: &Path, format: TraceFormat) -> Result<Trace> {
    read_trace_file_on(path, format, None)
}

/// [`read_trace_file`], naming the device a multi-device source (a PyTorch
/// snapshot) is read for; `None` reads its one busy device.
pub fn read_trace_file_on(
    path: &Path,
    format: TraceFormat,
    device: Option<usize>,
) -> Result<Trace> {
    let open = || {
        File::open(path).map_err(|source| ReplayError::Open {
            path: path.to_path_buf(),
            source,
        })
    };
    let mut head = Vec::with_capacity(HEAD_LEN as usize);
    open()?
        .take(HEAD_LEN)
        .read_to_end(&mut head)
        .map_err(|source| ReplayError::Io {
            what: path.display().to_string(),
            source,
        })?;
    if is_gzip(path, &head) {
        return read_gzip_file(path, format, device, open()?);
    }
    if head.is_empty() {
        // An empty file is an empty trace in every format (the command warns).
        return Ok(Trace::default());
    }
    let format = match format {
        TraceFormat::Auto => detect_format(path, &head)?,
        known => known,
    };
    read_format(BufReader::with_capacity(1 << 16, open()?), format, device)
}

/// Runs the reader for `format` (Auto must be resolved first; it reads JSONL).
fn read_format(input: impl BufRead, format: TraceFormat, device: Option<usize>) -> Result<Trace> {
    match format {
        TraceFormat::Jsonl | TraceFormat::Auto => read_jsonl(input),
        TraceFormat::RmmCsv => read_rmm_csv(input),
        TraceFormat::Pytorch => read_pytorch(input, device),
    }
}

/// A gzip decoder that keeps its first failure, so a corrupt or truncated
/// file is reported as [`ReplayError::Gzip`] whichever reader hit it, and not
/// as that reader's I/O or "not UTF-8" error.
struct Gunzip<R: BufRead> {
    inner: MultiGzDecoder<R>,
    failure: Option<io::Error>,
}

impl<R: BufRead> Read for Gunzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.failure.is_some() {
            return Err(io::Error::other("the gzip stream already failed"));
        }
        self.inner.read(buf).map_err(|err| {
            if err.kind() == io::ErrorKind::Interrupted {
                return err;
            }
            let message = format!("gzip: {err}");
            self.failure = Some(err);
            io::Error::other(message)
        })
    }
}

/// Reads a gzip-compressed trace. The whole stream is decompressed, even
/// past where the reader stops, so the trailing checksum is always checked;
/// when decompression fails, that failure is the error (it also explains
/// any garbage the reader choked on first).
fn read_gzip_file(
    path: &Path,
    format: TraceFormat,
    device: Option<usize>,
    file: File,
) -> Result<Trace> {
    let gzip_error = |source| ReplayError::Gzip {
        path: path.to_path_buf(),
        source,
    };
    let mut input = BufReader::with_capacity(
        1 << 16,
        Gunzip {
            inner: MultiGzDecoder::new(BufReader::with_capacity(1 << 16, file)),
            failure: None,
        },
    );
    let format = match format {
        TraceFormat::Auto => {
            let head = match input.fill_buf() {
                Ok(head) => head,
                Err(err) => return Err(gzip_error(input.get_mut().failure.take().unwrap_or(err))),
            };
            if head.is_empty() {
                return Ok(Trace::default());
            }
            let inner_name = match path.extension() {
                Some(ext) if ext.eq_ignore_ascii_case("gz") => path.with_extension(""),
                _ => path.to_path_buf(),
            };
            detect_named(&inner_name, path, head)?
        }
        known => known,
    };
    let read = read_format(&mut input, format, device);
    if input.get_ref().failure.is_none() {
        // Drain what the reader left: the checksum is at the very end.
        // Any failure here is recorded in `failure`; the copy's own error
        // says nothing more.
        let _ = io::copy(&mut input, &mut io::sink());
    }
    match input.get_mut().failure.take() {
        Some(err) => Err(gzip_error(err)),
        None => read,
    }
}

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
