//! The one error type of this crate.
//!
//! A relocation is best effort: the trait's steps return nothing, because a
//! relocation that cannot run leaves every allocation where it was and the
//! caller's work goes on. The errors here are what the execution steps and
//! the reference stream set report to a caller who asks (and what
//! [`crate::RelocationLog`] keeps as the last failure).

use mem_pools::{IoError, RelocationCopyError};
use mem_storage::StorageError;

/// What went wrong while relocating, or why a relocation was refused.
#[doc(alias = "ServerError")]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelocationError {
    /// A stream is recording a graph: the pages a recording touches keep
    /// their addresses until it seals, and nothing may wait on the device
    /// under it.
    #[error(
        "refused while {recording} stream(s) record a graph: pages a recording touches keep their \
         addresses until it seals; end the recording, then retry"
    )]
    Recording {
        /// Streams recording (at least 1; a runtime that only knows
        /// "some stream records" reports 1).
        recording: usize,
    },
    /// A stream index outside the set.
    #[error("no stream {stream}: the set holds {streams} streams (0..{streams})")]
    UnknownStream {
        /// The index asked for.
        stream: usize,
        /// Streams in the set.
        streams: usize,
    },
    /// `begin_recording` on a stream already recording.
    #[error("stream {stream} already records a graph: end that recording first")]
    AlreadyRecording {
        /// The stream.
        stream: usize,
    },
    /// `end_recording` on a stream that records nothing.
    #[error("stream {stream} records no graph: begin a recording before ending one")]
    NotRecording {
        /// The stream.
        stream: usize,
    },
    /// A copy could not be enqueued, or waiting for the device before the
    /// first copy failed. Every wait completed, so nothing moved and the
    /// targets were freed: retrying later is safe.
    #[error(
        "relocation copy failed after {enqueued} of {moves} copies; nothing moved, retry later: {source}"
    )]
    Copy {
        /// Copies enqueued before the failure.
        enqueued: usize,
        /// Copies the plan held.
        moves: usize,
        /// The storage's error.
        source: StorageError,
    },
    /// Waiting for the copies failed, so whether they finished is unknown:
    /// sources and targets are leaked (never reused, never freed) rather
    /// than freed while a copy may still write them.
    #[error(
        "waiting for {moves} relocation copies failed; {leaked_bytes} bytes are leaked rather than \
         freed while a copy may still run; check the device: {source}"
    )]
    Wait {
        /// Copies the plan held.
        moves: usize,
        /// Bytes of sources and targets leaked.
        leaked_bytes: u64,
        /// The storage's error.
        source: StorageError,
    },
    /// A plan or landed copies used on a manager that did not make them.
    #[error(
        "relocation made by manager #{found} used on manager #{expected}: use one manager throughout"
    )]
    Foreign {
        /// The manager asked.
        expected: u64,
        /// The manager that planned.
        found: u64,
    },
    /// The pool engine refused a call made through the set: a reservation
    /// (`StreamSet::reserve`) or a relocation step. The engine's error says why.
    #[error("the pool engine refused: {0}")]
    Engine(IoError),
}

impl From<RelocationCopyError> for RelocationError {
    fn from(err: RelocationCopyError) -> Self {
        match err {
            RelocationCopyError::Copy {
                enqueued,
                moves,
                source,
            } => Self::Copy {
                enqueued,
                moves,
                source,
            },
            RelocationCopyError::Wait {
                moves,
                leaked_bytes,
                source,
            } => Self::Wait {
                moves,
                leaked_bytes,
                source,
            },
            RelocationCopyError::Foreign { expected, found } => Self::Foreign { expected, found },
        }
    }
}

impl From<IoError> for RelocationError {
    fn from(err: IoError) -> Self {
        match err {
            IoError::ForeignRelocation { expected, found } => Self::Foreign { expected, found },
            other => Self::Engine(other),
        }
    }
}

/// The seed's name for this crate's error.
pub type ServerError = RelocationError;
