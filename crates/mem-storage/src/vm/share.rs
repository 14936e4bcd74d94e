//! What a chunk another process can open is created with, and what the
//! backend granted of it.
//!
//! A shareable chunk is a physical chunk of its own that the backend can
//! hand out as a POSIX file descriptor ([`crate::VirtualMemory::export_chunk`]):
//! on CUDA a `cuMemCreate` with `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`
//! requested, on the host a memfd of its own. Why a memfd of its own on the
//! host, when pooled chunks share one: a descriptor opens the whole file, so
//! a shared memfd would let an importer read every other chunk.

/// The handle types (beyond the POSIX file descriptor every shareable chunk
/// has) and flags a shareable chunk is asked for.
///
/// NCCL's `ncclMemAlloc` asks for the same set: FABRIC where the driver
/// allows it (multi-node NVLink), the RDMA flag where supported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ShareHandles {
    /// `CU_MEM_HANDLE_TYPE_FABRIC` beside the POSIX fd. Refused drivers
    /// (NOT_SUPPORTED, NOT_PERMITTED) are retried without it.
    pub fabric: bool,
    /// `gpuDirectRDMACapable` in the allocation flags. Refused drivers are
    /// retried without it.
    pub rdma: bool,
}

impl ShareHandles {
    /// The POSIX file descriptor alone.
    pub const POSIX_FD: ShareHandles = ShareHandles {
        fabric: false,
        rdma: false,
    };
}

/// What one chunk in a backend's table is, for the calls that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum ChunkKind {
    /// Created for the pools: never exported.
    #[default]
    Pooled,
    /// Created shareable: exportable; its release gives back this process's
    /// side only (importers keep the memory).
    Shareable,
    /// Imported from another process: not counted against this backend's
    /// capacity, released with `release_imported`.
    Imported,
}
