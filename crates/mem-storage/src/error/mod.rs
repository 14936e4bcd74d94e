//! The one error type of this crate.
//!
//! Every variant carries the numbers a caller needs to act on it. The split
//! that matters most to callers above: [`StorageError::OutOfMemory`] may
//! succeed after memory is given back (cleanup, reclaim, relocation), while
//! [`StorageError::TooBig`] never will, so retry loops must not spin on it.

use crate::id::StorageId;
use crate::id::{ChunkId, RangeId};

mod classify;
mod refuser;

pub use refuser::Refuser;

/// What went wrong in a storage or resource call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The device (or the stated capacity of a host or simulated device) has
    /// too little free memory now. Retryable after memory is given back.
    #[error(
        "out of memory on the {backend} device (refused by {refused_by}): requested {requested} bytes with \
         {free} of {total} bytes free; give memory back (cleanup, reclaim, relocation) and retry"
    )]
    OutOfMemory {
        /// Backend that refused (its name, for the message).
        backend: &'static str,
        /// Who refused: the device, or a budget stacked over it. Match on
        /// this, not on `backend`.
        refused_by: Refuser,
        /// Bytes asked for.
        requested: u64,
        /// Bytes free on the device when asked.
        free: u64,
        /// Bytes the device has in all.
        total: u64,
    },
    /// The request can never be served on this device, whatever is freed.
    #[error(
        "request of {requested} bytes can never fit on the {backend} device (refused by {refused_by}): at most {max} bytes can be allocated at once; \
         split the allocation"
    )]
    TooBig {
        /// Backend that refused (its name, for the message).
        backend: &'static str,
        /// Who refused: the device, or a budget stacked over it whose whole
        /// limit is smaller than the request.
        refused_by: Refuser,
        /// Bytes asked for.
        requested: u64,
        /// The largest single allocation the device accepts.
        max: u64,
    },
    /// A storage id that this storage never issued, or whose page was freed.
    #[error(
        "unknown or stale storage id {id}: the page was never allocated here or has been deallocated"
    )]
    UnknownId {
        /// The id presented.
        id: StorageId,
    },
    /// A device pointer that the resource does not own (never allocated by
    /// it, already freed, or a range that runs past its allocation).
    #[error(
        "pointer range {ptr:#x}..+{bytes} is not inside one live allocation of the {backend} resource"
    )]
    UnknownPointer {
        /// Backend that refused.
        backend: &'static str,
        /// The pointer presented.
        ptr: u64,
        /// The length of the range presented.
        bytes: u64,
    },
    /// An offset view that does not lie inside its page.
    #[error("offset range {start}..{end} lies outside page {id} of {page_size} bytes")]
    OutOfBounds {
        /// The page.
        id: StorageId,
        /// First byte of the view, relative to the page.
        start: u64,
        /// One past the last byte of the view, relative to the page.
        end: u64,
        /// Size of the page.
        page_size: u64,
    },
    /// The backend cannot do this (a simulated device holds no bytes to read).
    #[error("{operation} is not supported by the {backend} backend")]
    Unsupported {
        /// What was asked.
        operation: &'static str,
        /// Backend that refused.
        backend: &'static str,
    },
    /// A fault injected by [`crate::FaultInjection`] for a test.
    #[error("injected fault on call {call} ({operation})")]
    Injected {
        /// 1-based index of the failed call among the calls counted.
        call: u64,
        /// The operation that failed.
        operation: &'static str,
    },
    /// The CUDA driver returned an error.
    #[error("CUDA driver error during {operation}: {source}")]
    Driver {
        /// What was being done.
        operation: &'static str,
        /// The driver's error.
        #[source]
        source: cudarc::driver::DriverError,
    },
    /// A stream id that this resource never registered.
    #[error(
        "unknown stream {stream} on the {backend} resource: create or register the stream first"
    )]
    UnknownStream {
        /// Backend that refused.
        backend: &'static str,
        /// The stream id presented.
        stream: u64,
    },
    /// A construction parameter out of its valid range.
    #[error("invalid {parameter} {value}: expected {expected}")]
    InvalidArgument {
        /// Which parameter.
        parameter: &'static str,
        /// The value given.
        value: u64,
        /// What would have been accepted.
        expected: &'static str,
    },
    /// A virtual range id that this backend never issued, or already freed.
    #[error(
        "unknown or stale {range} on the {backend} backend: never reserved here or already freed"
    )]
    UnknownRange {
        /// Backend that refused.
        backend: &'static str,
        /// The id presented.
        range: RangeId,
    },
    /// A chunk id that this backend never issued, or already released.
    #[error(
        "unknown or stale {chunk} on the {backend} backend: never created here or already released"
    )]
    UnknownChunk {
        /// Backend that refused.
        backend: &'static str,
        /// The id presented.
        chunk: ChunkId,
    },
    /// A virtual-memory size or offset that is not a multiple of the
    /// granularity (sizes must also be positive).
    #[error(
        "{parameter} {value} on the {backend} backend is not a {} multiple of the granularity {granularity}; \
         round it up to the granularity",
        if *parameter == "offset" { "whole" } else { "positive" }
    )]
    NotGranular {
        /// Backend that refused.
        backend: &'static str,
        /// Which argument (`"bytes"`, `"offset"`, `"granularity"`).
        parameter: &'static str,
        /// The value given.
        value: u64,
        /// The unit it must be a multiple of.
        granularity: u64,
    },
    /// A map or unmap that runs past the end of its range.
    #[error("bytes {offset}..+{bytes} run past the end of {range} of {len} bytes")]
    OutsideRange {
        /// The range.
        range: RangeId,
        /// First byte asked for, relative to the range.
        offset: u64,
        /// Bytes asked for.
        bytes: u64,
        /// Bytes the range has.
        len: u64,
    },
    /// A map over part of a range that is already mapped.
    #[error(
        "bytes {offset}..+{bytes} of {range} overlap {mapped_chunk}, mapped at offset {mapped_offset}; unmap it first"
    )]
    AlreadyMapped {
        /// The range.
        range: RangeId,
        /// First byte asked for, relative to the range.
        offset: u64,
        /// Bytes asked for (the chunk's size).
        bytes: u64,
        /// Where the mapping in the way starts, relative to the range.
        mapped_offset: u64,
        /// The chunk mapped there.
        mapped_chunk: ChunkId,
    },
    /// An unmap of bytes not covered exactly by whole mappings.
    #[error(
        "bytes {offset}..+{bytes} of {range} are not covered exactly by whole mappings: none starts at offset {at}, \
         or the one there runs past the end"
    )]
    NotMapped {
        /// The range.
        range: RangeId,
        /// First byte asked for, relative to the range.
        offset: u64,
        /// Bytes asked for.
        bytes: u64,
        /// The first offset where a whole mapping was expected.
        at: u64,
    },
    /// A chunk that is mapped: it cannot be mapped twice or released.
    #[error("{chunk} is mapped at offset {offset} of {range}; unmap it first")]
    ChunkMapped {
        /// The chunk.
        chunk: ChunkId,
        /// The range it is mapped in.
        range: RangeId,
        /// Where, relative to the range.
        offset: u64,
    },
    /// A range that still has chunks mapped in it cannot be freed.
    #[error(
        "{range} still has {mapped_chunks} chunks ({mapped_bytes} bytes) mapped; unmap them first"
    )]
    RangeInUse {
        /// The range.
        range: RangeId,
        /// Chunks mapped in it.
        mapped_chunks: u64,
        /// Bytes mapped in it.
        mapped_bytes: u64,
    },
    /// Byte access to addresses that are not mapped (never touched).
    #[error(
        "address range {ptr:#x}..+{bytes} on the {backend} backend is not mapped from {first_unmapped:#x} on"
    )]
    UnmappedAddress {
        /// Backend that refused.
        backend: &'static str,
        /// First address asked for.
        ptr: u64,
        /// Bytes asked for.
        bytes: u64,
        /// The first address asked for that has no memory mapped.
        first_unmapped: u64,
    },
    /// No room for a virtual range of this size in the address space.
    #[error(
        "no room for a virtual range of {requested} bytes on the {backend} backend; free ranges or reserve less"
    )]
    NoAddressSpace {
        /// Backend that refused.
        backend: &'static str,
        /// Bytes asked for.
        requested: u64,
    },
    /// A system call of the host backend failed.
    #[error("{operation} failed: {}", std::io::Error::from_raw_os_error(*errno))]
    Os {
        /// What was being done.
        operation: &'static str,
        /// The OS error number (`errno`).
        errno: i32,
    },
    /// A chunk that cannot be exported or released as asked: exported but
    /// not created shareable, or an imported chunk released as one of this
    /// backend's own.
    #[error("{chunk} cannot be {operation}: {reason}")]
    NotShareable {
        /// The chunk.
        chunk: ChunkId,
        /// What was asked (`"exported"`, `"released"`).
        operation: &'static str,
        /// Why, and what to do instead.
        reason: &'static str,
    },
    /// A descriptor handed to `import_chunk` that is not an exported chunk
    /// of the size it claims; nothing was imported.
    #[error(
        "cannot import a shared chunk: {reason} (expected {expected} bytes, found {found}); \
         pass the descriptor the exporter's export made, with its sizes unchanged"
    )]
    BadShareHandle {
        /// What is wrong with it.
        reason: &'static str,
        /// Bytes the caller said the chunk holds.
        expected: u64,
        /// Bytes the descriptor holds (0 when it holds no memory at all).
        found: u64,
    },
    /// No CUDA driver or device can be used on this machine.
    #[error("CUDA is not available: {reason}")]
    NoDevice {
        /// Why.
        reason: String,
    },
    /// A device that cannot reach another device's memory was named as its
    /// peer (no peer link between them: `cuDeviceCanAccessPeer` says no).
    #[error(
        "device {peer} cannot reach the memory of device {device} (no peer link); \
         copy through the host or a device that can reach both"
    )]
    PeerUnreachable {
        /// The device whose memory was to be opened (ordinal).
        device: usize,
        /// The device that was to reach it (ordinal).
        peer: usize,
    },
    /// A chunk hook (a registration with NCCL, UCX, RDMA) refused memory
    /// that was just mapped or allocated: it was unmapped or freed again.
    #[error(
        "the chunk hook refused the {what} at {ptr} ({bytes} bytes): {reason}; \
         it was given back"
    )]
    HookRefused {
        /// `"chunk"` (an arena chunk) or `"page"` (a whole allocation).
        what: &'static str,
        /// Its address.
        ptr: crate::DevicePtr,
        /// Its length.
        bytes: u64,
        /// The hook's words.
        reason: String,
    },
    /// An entry of the driver cost table's text form that does not parse.
    #[error("driver cost entry `{entry}`: expected {expected}")]
    BadDriverCost {
        /// The entry as given.
        entry: String,
        /// What is valid there.
        expected: &'static str,
    },
}
