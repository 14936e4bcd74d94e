//! The one error type of this crate.
//!
//! A relocation is best effort: the trait's steps return nothing, because a
//! relocation that cannot run leaves every allocation where it was and the
//! caller's work goes on. The errors here are what the execution steps and
//! a runtime's relocations report to a caller who asks (and what
//! [`crate::RelocationLog`] keeps as the last failure).
//!
//! Two of its variants are the one definition of their idea for every crate
//! above: [`RelocationError::Recording`] (refused because a stream records a
//! graph) and [`RelocationError::UnknownStream`] (a stream index past a set
//! of streams). mem-capture and the facade carry these values rather than
//! copies of their fields.

use mem_pools::{IoError, RelocationCopyError};

/// What went wrong while relocating, or why a relocation was refused.
#[doc(alias = "ServerError")]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RelocationError {
    /// A stream is recording a graph: the pages a recording touches keep
    /// their addresses until it seals, nothing may wait on the device under
    /// it, and no second capture may start.
    #[error(
        "refused while {recording} stream(s) record a graph: pages a recording touches keep their \
         addresses until it seals; end (seal or abort) the recording, then retry"
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
    /// The plan → copy step failed: a copy could not be enqueued (nothing
    /// moved, the targets were freed: retrying later is safe), waiting for
    /// the copies failed (sources and targets are leaked rather than freed
    /// while a copy may still write them), or the plan was another
    /// manager's. The pool engine's [`RelocationCopyError`] says which, with
    /// its numbers.
    #[error(transparent)]
    Copy(#[from] RelocationCopyError),
    /// The pool engine refused a call made through the streams: a
    /// reservation or a relocation step (a plan or landed copies
    /// used on a manager that did not make them is the engine's
    /// [`IoError::ForeignRelocation`]). The engine's error says why.
    #[error("the pool engine refused: {0}")]
    Engine(#[from] IoError),
}

impl RelocationError {
    /// Whether this is an out-of-memory refusal, here or in the error it
    /// carries (a copy or wait that failed for lack of memory, or the pool
    /// engine's out-of-memory).
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            Self::Copy(err) => err.is_out_of_memory(),
            Self::Engine(err) => err.is_out_of_memory(),
            _ => false,
        }
    }
}

/// The name the `RelocatingStreams` protocol's API documents use for this
/// crate's error.
pub type ServerError = RelocationError;
