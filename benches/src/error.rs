//! The one error type of the benchmark helpers.

use thiserror::Error;

/// Result of a benchmark helper.
pub type Result<T, E = BenchError> = std::result::Result<T, E>;

/// What went wrong while setting up or running a measurement.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BenchError {
    /// The pool engine refused a reservation.
    #[error("gpumem pools refused {size} bytes with {live} slices live: {source}")]
    Pool {
        /// Requested bytes.
        size: u64,
        /// Slices live at the time.
        live: usize,
        /// The engine's error.
        source: mem_pools::IoError,
    },
    /// `offset-allocator` had no room (or no free node) for a request.
    #[error(
        "offset-allocator has no room for {size} bytes with {live} allocations live; \
         raise its size or max_allocs"
    )]
    OffsetFull {
        /// Requested bytes.
        size: u64,
        /// Allocations live at the time.
        live: usize,
    },
    /// The system allocator returned null.
    #[error("the system allocator returned null for {size} bytes (host out of memory?)")]
    SystemOutOfMemory {
        /// Requested bytes.
        size: u64,
    },
    /// A size the peer cannot express (offset-allocator counts `u32` units).
    #[error("{peer} cannot express {size} bytes: {reason}")]
    Unrepresentable {
        /// Which peer.
        peer: &'static str,
        /// Requested bytes.
        size: u64,
        /// Why.
        reason: &'static str,
    },
    /// A replay or workload of the `gpumem` command's library failed.
    #[error("replay: {0}")]
    Replay(#[from] gpumem_replay::ReplayError),
    /// `gpumem::Device` refused to build or to reserve.
    #[error("device: {0}")]
    Device(#[from] gpumem::GpuMemError),
    /// A relocation failed (what leaked, if anything, is in the message).
    #[error("relocation: {0}")]
    Relocation(#[from] mem_relocate::RelocationError),
    /// The storage layer failed (CUDA measurements).
    #[error("storage: {0}")]
    Storage(#[from] mem_storage::StorageError),
    /// A pool-engine call other than a reservation failed.
    #[error("pool engine: {0}")]
    Engine(#[from] mem_pools::IoError),
    /// The CUDA driver failed outside the storage layer (graphs, events).
    #[error("CUDA driver: {what}: {message}")]
    Driver {
        /// What was being done.
        what: &'static str,
        /// The driver's message.
        message: String,
    },
    /// A GPU check found wrong results (bytes or allocation counts).
    #[error("check failed: {0}")]
    Check(String),
}

impl BenchError {
    /// Whether this is an out-of-memory refusal: a peer out of room
    /// (offset-allocator full, the system allocator returning null) or a
    /// gpumem layer's out-of-memory carried unchanged.
    pub fn is_out_of_memory(&self) -> bool {
        match self {
            Self::OffsetFull { .. } | Self::SystemOutOfMemory { .. } => true,
            Self::Pool { source, .. } => source.is_out_of_memory(),
            Self::Replay(err) => err.is_out_of_memory(),
            Self::Relocation(err) => err.is_out_of_memory(),
            Self::Device(err) => err.is_out_of_memory(),
            Self::Storage(err) => err.is_out_of_memory(),
            Self::Engine(err) => err.is_out_of_memory(),
            Self::Unrepresentable { .. } | Self::Driver { .. } | Self::Check(_) => false,
        }
    }
}
