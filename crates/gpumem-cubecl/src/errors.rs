//! mem-pools' errors in CubeCL's `IoError` shape.
//!
//! The adapter returns CubeCL's error type, since the runtime matches on it
//! (an `OutOfMemory` is retried after a cleanup, a `BufferTooBig` never is).
//! Where CubeCL's storage refused, its own error is returned unchanged; the
//! rest map to the CubeCL variant that means the same, with gpumem's message
//! as the reason where CubeCL's variant carries one.

use cubecl_environment::backtrace::BackTrace;
use cubecl_server::server::IoError as CubeIoError;
use mem_pools::IoError;
use mem_storage::StorageError;

/// `error`, raised while reserving or reaching `size` bytes, in CubeCL's
/// shape. `kept` is the error CubeCL's storage returned, if it refused.
pub(crate) fn to_cube(error: IoError, size: u64, kept: Option<CubeIoError>) -> CubeIoError {
    if let Some(kept) = kept {
        return kept;
    }
    let backtrace = BackTrace::capture();
    match error {
        IoError::BufferTooBig { .. } | IoError::InvalidSize { .. } => {
            CubeIoError::BufferTooBig { size, backtrace }
        }
        IoError::Storage(StorageError::TooBig { .. }) => {
            CubeIoError::BufferTooBig { size, backtrace }
        }
        IoError::Storage(StorageError::OutOfMemory { .. }) => {
            CubeIoError::OutOfMemory { size, backtrace }
        }
        IoError::PageSizesExhausted { .. } => CubeIoError::PageSizesExhausted { size, backtrace },
        IoError::StaleBinding { .. } | IoError::ForeignBinding { .. } => CubeIoError::NotFound {
            backtrace,
            reason: error.to_string().into(),
        },
        other => CubeIoError::Unknown {
            description: other.to_string(),
            backtrace,
        },
    }
}

/// The error for a binding this memory cannot route, with its reason.
pub(crate) fn not_found(reason: &'static str) -> CubeIoError {
    CubeIoError::NotFound {
        backtrace: BackTrace::capture(),
        reason: reason.into(),
    }
}
