//! Why the model refused a request.

use std::fmt;

use gpumem::storage::units::format_bytes;

/// A refusal of the modeled caching allocator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelError {
    /// No cached block fits and the device has no room for the segment (or
    /// pages) the request needs, even after the cache was released.
    OutOfMemory {
        /// Bytes requested.
        requested: u64,
        /// Bytes the new segment or pages would have held.
        segment: u64,
        /// Bytes held when it was refused.
        reserved: u64,
        /// The device's bytes.
        capacity: u64,
    },
    /// A free of an address where no allocated block starts.
    NotAllocated {
        /// The address freed.
        addr: u64,
    },
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ModelError::OutOfMemory {
                requested,
                segment,
                reserved,
                capacity,
            } => write!(
                f,
                "CUDA out of memory (modeled): tried to allocate {} (a new segment of {}) with {} \
                 of the {} device reserved, after freeing every cached segment",
                format_bytes(requested),
                format_bytes(segment),
                format_bytes(reserved),
                format_bytes(capacity)
            ),
            ModelError::NotAllocated { addr } => {
                write!(f, "free of {addr:#x}, where no allocated block starts")
            }
        }
    }
}
