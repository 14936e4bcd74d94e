//! `VirtualMemory`: reserve addresses, create physical chunks, map them.
//!
//! CUDA's virtual memory management (`cuMemAddressReserve`, `cuMemCreate`,
//! `cuMemMap`) as a capability beside [`crate::DeviceResource`]. It is what
//! lets a pool keep one large range whose addresses never move and put
//! physical memory only under live data (docs/design.md, "Physical memory
//! follows live data"): growth maps a chunk in place, a hole gives its chunk
//! back or moves it elsewhere, sleep unmaps everything and keeps every
//! address. Three backends: [`HostVirtualMemory`](crate::HostVirtualMemory) (a memfd mapped with
//! `mmap(MAP_FIXED)`, real bytes), [`SimulatedVirtualMemory`](crate::SimulatedVirtualMemory) (addresses and
//! counts only) and [`crate::cuda::CudaVirtualMemory`]; the adaptors
//! (logging, statistics, tracking, fault injection) implement it whenever
//! the resource they wrap does.
//!
//! Every method takes `&self` and every backend is `Send + Sync`, as for
//! `DeviceResource`, so one backend serves a device behind an `Arc`.
//! Backends validate every id, offset and size against one table
//! ([`table::VmTable`]) before any system or driver call, so every refusal
//! is a typed [`StorageError`] that changes nothing.

mod forward;
pub(crate) mod granules;
mod share;
mod slab;
mod stats;
pub(crate) mod table;
mod table_access;
mod table_chunks;
pub(crate) mod table_map;
#[cfg(test)]
mod table_tests;

pub use crate::id::{ChunkId, RangeId, VaRange};
pub(crate) use share::ChunkKind;
pub use share::ShareHandles;
pub use stats::VirtualMemoryStats;

use std::fmt;
#[cfg(unix)]
use std::os::fd::OwnedFd;

use crate::error::StorageError;
use crate::id::DevicePtr;
use crate::resource::MemInfo;

/// CUDA's allocation granularity on current GPUs, and the default of the
/// host and simulated backends: 2 MiB.
pub const DEFAULT_GRANULARITY: u64 = 2 << 20;

/// Reserve virtual ranges, create physical chunks, map chunks into ranges.
///
/// Contract for implementors:
/// - Sizes and offsets are multiples of [`VirtualMemory::granularity`]
///   (sizes are positive); anything else is [`StorageError::NotGranular`].
/// - A chunk is mapped at most once at a time, always whole. A range part is
///   mapped at most once. `unmap` removes whole mappings only.
/// - A chunk keeps its bytes while it exists, mapped or not, and shows them
///   wherever it is mapped next (cuMemMap semantics).
/// - `release_chunk` of a mapped chunk and `free_range` of a range with
///   mappings are refused ([`StorageError::ChunkMapped`],
///   [`StorageError::RangeInUse`]); a refused call changes nothing.
/// - Byte access reaches only mapped addresses: anything else is
///   [`StorageError::UnmappedAddress`], checked before memory is touched.
/// - Ids are never reused; dropping a backend releases everything it holds.
pub trait VirtualMemory: Send + Sync + fmt::Debug {
    /// Short backend name for reports and errors (`"host"`, `"sim"`, `"cuda"`).
    fn backend(&self) -> &'static str;

    /// The unit of every size and offset, in bytes (a power of two).
    fn granularity(&self) -> u64;

    /// Whether mapped addresses hold real bytes (`false` when simulated).
    fn holds_memory(&self) -> bool {
        true
    }

    /// Reserve `bytes` of virtual addresses (no memory), aligned to the
    /// granularity.
    fn reserve_range(&self, bytes: u64) -> Result<VaRange, StorageError>;

    /// Give a range's addresses back. Refused while anything is mapped in it.
    fn free_range(&self, range: RangeId) -> Result<(), StorageError>;

    /// The range `range` names, while it is reserved.
    fn range_info(&self, range: RangeId) -> Result<VaRange, StorageError>;

    /// Create a physical chunk of `bytes`, counted against the backend's
    /// capacity: [`StorageError::OutOfMemory`] when it does not fit now,
    /// [`StorageError::TooBig`] when it never can.
    fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError>;

    /// Give a chunk's memory back (its bytes are lost). Refused while mapped.
    fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError>;

    /// The size of a live chunk.
    fn chunk_bytes(&self, chunk: ChunkId) -> Result<u64, StorageError>;

    /// Map the whole of `chunk` at `offset` in `range`, readable and
    /// writable; returns the address it now starts at.
    fn map(&self, range: RangeId, offset: u64, chunk: ChunkId) -> Result<DevicePtr, StorageError>;

    /// Unmap `offset..offset+bytes` of `range`, which must be covered exactly
    /// by whole mappings (one or more, without holes). Returns the chunks
    /// unmapped, in address order: they keep their bytes and can be mapped
    /// again or released.
    fn unmap(&self, range: RangeId, offset: u64, bytes: u64) -> Result<Vec<ChunkId>, StorageError>;

    /// Physical capacity and what of it is not held by chunks.
    fn physical_info(&self) -> Result<MemInfo, StorageError>;

    /// The backend's counters now.
    fn vm_stats(&self) -> VirtualMemoryStats;

    /// Copy `data` to the mapped addresses at `dst`; done on return.
    fn write_mapped(&self, dst: DevicePtr, data: &[u8]) -> Result<(), StorageError>;

    /// Copy `out.len()` bytes from the mapped addresses at `src`.
    fn read_mapped(&self, src: DevicePtr, out: &mut [u8]) -> Result<(), StorageError>;

    /// Set `bytes` mapped bytes at `dst` to `value`; done on return.
    fn fill_mapped(&self, dst: DevicePtr, value: u8, bytes: u64) -> Result<(), StorageError>;

    /// Create a physical chunk of `bytes` that [`VirtualMemory::export_chunk`]
    /// can hand to another process, asked for with `handles` beside the POSIX
    /// file descriptor; returns it and what the backend granted of `handles`
    /// (a driver that refuses FABRIC or RDMA is retried without it). Counted
    /// against capacity as [`VirtualMemory::create_chunk`]. Its release gives
    /// back this process's side only: importers keep the memory until they
    /// release theirs.
    ///
    /// The default refuses with [`StorageError::Unsupported`] (the simulated
    /// backend holds no memory to share).
    fn create_shareable_chunk(
        &self,
        bytes: u64,
        handles: ShareHandles,
    ) -> Result<(ChunkId, ShareHandles), StorageError> {
        let _ = (bytes, handles);
        Err(StorageError::Unsupported {
            operation: "create_shareable_chunk",
            backend: self.backend(),
        })
    }

    /// The size every shareable chunk asked for with `handles` is a
    /// multiple of: the driver's recommended granularity for such chunks
    /// (`CU_MEM_ALLOC_GRANULARITY_RECOMMENDED`, what NCCL sizes its chunks
    /// by), never less than [`VirtualMemory::granularity`]. The default is
    /// the granularity.
    fn share_granularity(&self, handles: ShareHandles) -> u64 {
        let _ = handles;
        self.granularity()
    }

    /// A new POSIX file descriptor for `chunk`'s memory, which another
    /// process passes to [`VirtualMemory::import_chunk`]. Refused with
    /// [`StorageError::NotShareable`] for a chunk not created shareable.
    #[cfg(unix)]
    fn export_chunk(&self, chunk: ChunkId) -> Result<OwnedFd, StorageError> {
        let _ = chunk;
        Err(StorageError::Unsupported {
            operation: "export_chunk",
            backend: self.backend(),
        })
    }

    /// Take in a chunk of `bytes` another process exported, as a chunk of
    /// this backend that maps like any other. It is not counted against this
    /// backend's capacity (the exporter's device holds the memory). A
    /// descriptor that is not such a chunk, or not of `bytes`, is refused
    /// with [`StorageError::BadShareHandle`] and nothing changes.
    #[cfg(unix)]
    fn import_chunk(&self, handle: OwnedFd, bytes: u64) -> Result<ChunkId, StorageError> {
        let _ = (handle, bytes);
        Err(StorageError::Unsupported {
            operation: "import_chunk",
            backend: self.backend(),
        })
    }

    /// Give back this process's side of an imported chunk (refused while
    /// mapped). An imported chunk is never released with
    /// [`VirtualMemory::release_chunk`], which refuses it, so a budget that
    /// refunds released chunks never refunds one it did not charge.
    fn release_imported(&self, chunk: ChunkId) -> Result<(), StorageError> {
        let _ = chunk;
        Err(StorageError::Unsupported {
            operation: "release_imported",
            backend: self.backend(),
        })
    }

    /// Copy `bytes` between mapped addresses; done on return. The host moves
    /// overlapping ranges like `memmove`; CUDA refuses overlap
    /// ([`StorageError::InvalidArgument`]), so keep them disjoint.
    fn copy_mapped(&self, src: DevicePtr, dst: DevicePtr, bytes: u64) -> Result<(), StorageError>;
}

/// Check a granularity a constructor was given: a power of two, a
/// multiple of `minimum` (the OS page size, or the driver's minimum) and at
/// most 2^32.
pub(crate) fn check_granularity(
    backend: &'static str,
    granularity: u64,
    minimum: u64,
) -> Result<(), StorageError> {
    if !granularity.is_power_of_two() || granularity > 1 << 32 {
        return Err(StorageError::InvalidArgument {
            parameter: "granularity",
            value: granularity,
            expected: "a power of two no larger than 2^32",
        });
    }
    if granularity < minimum || !granularity.is_multiple_of(minimum) {
        return Err(StorageError::NotGranular {
            backend,
            parameter: "granularity",
            value: granularity,
            granularity: minimum,
        });
    }
    Ok(())
}
