//! Which refusals are out of memory: the one question a caller's retry
//! policy asks of every error, answered per enum.

use super::{InstallMemoryPoolsError, IoError, RelocationCopyError};

impl IoError {
    /// Whether this is the storage's out-of-memory refusal
    /// ([`mem_storage::StorageError::OutOfMemory`] inside [`IoError::Storage`]): the
    /// same call may succeed once memory is given back. False for sizes no
    /// pool or device can ever serve and for a capture window that would
    /// allocate.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, Self::Storage(err) if err.is_out_of_memory())
    }
}

impl InstallMemoryPoolsError {
    /// Whether this is an out-of-memory refusal: never — installing a
    /// layout allocates nothing; every variant says what is in the way.
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            Self::PoolsInUse { .. }
            | Self::PagesHeld { .. }
            | Self::PagesQuarantined { .. }
            | Self::CaptureActive => false,
        }
    }
}

impl RelocationCopyError {
    /// Whether the storage error this carries is an out-of-memory refusal.
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            Self::Copy { source, .. } | Self::Wait { source, .. } => source.is_out_of_memory(),
            Self::Foreign { .. } => false,
        }
    }
}
