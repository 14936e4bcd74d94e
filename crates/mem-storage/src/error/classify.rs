//! What a caller asks of a [`StorageError`] before acting on it: may a
//! retry succeed, is it out of memory, and who refused.

use super::{Refuser, StorageError};

impl StorageError {
    /// Whether the same request may succeed once memory is given back.
    ///
    /// True for out-of-memory and injected faults (a test's stand-in for a
    /// transient failure); false for everything a retry cannot fix.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::OutOfMemory { .. } | Self::Injected { .. })
    }

    /// Whether this is an out-of-memory refusal ([`StorageError::OutOfMemory`]).
    ///
    /// False for [`StorageError::TooBig`] (no amount of freeing helps) and
    /// for injected faults.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, Self::OutOfMemory { .. })
    }

    /// Who refused, when this is an out-of-memory refusal or a request
    /// that can never fit.
    pub fn refused_by(&self) -> Option<Refuser> {
        match self {
            Self::OutOfMemory { refused_by, .. } | Self::TooBig { refused_by, .. } => {
                Some(*refused_by)
            }
            _ => None,
        }
    }
}
