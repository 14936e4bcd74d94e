//! The crate's one error type: every failure a replay, and the command on
//! top of it, can report.
//!
//! Variants carry the numbers a user needs to fix the input (line or record
//! number, id, size) and the messages say what to do next.

use std::path::PathBuf;

/// Everything that can go wrong reading, generating, replaying or plotting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A file could not be opened or created.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The path as given.
        path: PathBuf,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// Reading or writing failed part-way.
    #[error("I/O error on {what}: {source}")]
    Io {
        /// What was being read or written.
        what: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// A gzip-compressed trace cannot be decompressed: corrupt, truncated,
    /// or named `.gz` without being gzip.
    #[error("cannot decompress {path}: {source}; the gzip file is corrupt or truncated")]
    Gzip {
        /// The path as given.
        path: PathBuf,
        /// The decoder's reason.
        source: std::io::Error,
    },
    /// A line or record of a trace is malformed.
    #[error("{format} {unit} {number}: {message}")]
    Parse {
        /// Which reader (`jsonl`, `rmm-csv`, `pytorch`).
        format: &'static str,
        /// `line` for text formats, `record` for snapshots.
        unit: &'static str,
        /// 1-based line or record number.
        number: u64,
        /// What was wrong and, where useful, what was expected.
        message: String,
    },
    /// The input is not in any format this command reads.
    #[error("cannot tell the format of {path}: {reason}; pass --format jsonl, rmm-csv or pytorch")]
    UnknownFormat {
        /// The path as given.
        path: PathBuf,
        /// What was seen.
        reason: String,
    },
    /// An allocation event reuses an id that is still live.
    #[error(
        "event {}: id {id} is allocated again while still live; the trace is missing a free for it",
        event + 1
    )]
    IdAlreadyLive {
        /// 0-based index of the offending event in the trace (printed from 1).
        event: usize,
        /// The id.
        id: u64,
    },
    /// The trace holds more allocations than one replay can index.
    #[error("trace has more than {max} allocations; split it into smaller traces")]
    TooManyAllocations {
        /// The limit.
        max: u64,
    },
    /// A backend failed in a way that invalidates the replay (not an ordinary failed allocation).
    #[error("backend {backend}: {message}")]
    Backend {
        /// Backend name.
        backend: &'static str,
        /// What happened.
        message: String,
    },
    /// `--backend cuda` on a machine without a CUDA driver.
    #[error(
        "no CUDA driver found on this machine; use --backend sim (simulated device) or --backend host"
    )]
    CudaUnavailable,
    /// A command-line value is out of range.
    #[error("invalid {option} {value}: {reason}")]
    InvalidArgument {
        /// The option, e.g. `--device-gib`.
        option: &'static str,
        /// The value given.
        value: String,
        /// Why it is refused and what is accepted.
        reason: String,
    },
    /// A command-line value names a file that does not exist.
    #[error("{option}: file not found: {}{hint}", path.display())]
    FileNotFound {
        /// The option, e.g. `--config`.
        option: &'static str,
        /// The path as given.
        path: PathBuf,
        /// More to say (starts with `; `), or empty.
        hint: String,
    },
    /// The replay finished but the backend refused allocations (the report
    /// was printed; `--allow-failures` accepts them).
    #[error(
        "{failed} of {attempted} allocations failed (first: {first}); the report counts them; \
         pass --allow-failures to replay a trace larger than the device on purpose"
    )]
    FailedAllocations {
        /// Refused reservations.
        failed: u64,
        /// Reservations attempted.
        attempted: u64,
        /// The first refusal, on one line.
        first: String,
    },
    /// `gpumem compare --against` names no allocator it knows.
    #[error(
        "invalid --against {given}: {reason}; the allocators are {valid} \
         (comma-separated; without --against every one is compared)"
    )]
    UnknownAllocator {
        /// The list as given.
        given: String,
        /// What is wrong with it (names the word at fault).
        reason: String,
        /// Every valid name, comma-separated.
        valid: String,
    },
    /// `gpumem compare` finished but some allocators refused allocations
    /// (the table was printed; `--allow-failures` accepts them).
    #[error(
        "allocations failed on {summary}; the table counts them; pass --allow-failures \
         to compare on a device too small for the trace on purpose"
    )]
    CompareFailures {
        /// Per failing allocator: `NAME (F of A; first: …)`, `; `-separated.
        summary: String,
    },
    /// Drawing the plot failed.
    #[error("cannot draw plot {path}: {message}")]
    Plot {
        /// Output path.
        path: PathBuf,
        /// The drawing library's message.
        message: String,
    },
}

/// Result alias for this crate.
pub type Result<T, E = ReplayError> = std::result::Result<T, E>;

impl ReplayError {
    /// Whether this is a write to stdout that failed because the reader went
    /// away (`gpumem replay … | head -1`): not a failure of the command.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, ReplayError::Io { what, source }
            if what == "stdout" && source.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// A parse error at a 1-based line of a text trace.
    pub(crate) fn line(format: &'static str, line: u64, message: impl Into<String>) -> Self {
        ReplayError::Parse {
            format,
            unit: "line",
            number: line,
            message: message.into(),
        }
    }

    /// A parse error at a 1-based record of a binary trace.
    pub(crate) fn record(format: &'static str, record: u64, message: impl Into<String>) -> Self {
        ReplayError::Parse {
            format,
            unit: "record",
            number: record,
            message: message.into(),
        }
    }
}

impl ReplayError {
    /// Whether this is an out-of-memory refusal. No variant carries one
    /// today: a replay counts the allocations the device refused and
    /// reports them together ([`ReplayError::FailedAllocations`]). A variant
    /// that wraps a gpumem error must answer with that error's
    /// `is_out_of_memory`.
    pub fn is_out_of_memory(&self) -> bool {
        false
    }
}
