//! Memory another process can use: shareable buffers, the descriptor that
//! carries one to another process, and the importer's view of it
//! (docs/sharing.md).
//!
//! The rule that makes it safe: a shareable buffer lies on physical chunks
//! of its own, in an address range of its own, outside every pool. No
//! other slice is ever placed on those chunks, so an importer sees the
//! buffer's bytes and zeros (the granule padding) and nothing else; and
//! since no pool owns them, relocation, compaction, reclaim, shedding and
//! sleep never see them, so nothing moves or unmaps them behind an
//! importer's back. When the exporter drops the buffer its chunks are
//! unmapped and released — never reused — and the memory lives on in
//! importers (the driver's handle reference counts, the memfd's
//! descriptors) until they drop theirs.

mod region;
mod wire;

use std::os::fd::OwnedFd;
use std::sync::Arc;

use mem_pools::ManagedMemoryHandle;
use mem_storage::{ShareHandles, VirtualMemory};

use crate::error::{GpuMemError, Result};
use crate::shared::DeviceShared;
use region::{Region, Side};

pub use wire::{MAX_SHARED_CHUNKS, WIRE_VERSION, receive_shared, send_shared};

/// One physical chunk of a [`SharedBuffer`]: a handle another process
/// imports it with, where it sits in the buffer and how much of it the
/// buffer uses.
#[derive(Debug)]
pub struct SharedChunk {
    /// The chunk's shareable handle: a POSIX file descriptor (a memfd on
    /// the host, the driver's descriptor on CUDA).
    pub fd: OwnedFd,
    /// Where the chunk starts in the buffer, in bytes.
    pub offset: u64,
    /// The chunk's size (a multiple of the device's granularity).
    pub bytes: u64,
    /// The bytes of the buffer in it (the rest is zero padding).
    pub used: u64,
}

/// What another process needs to map a shareable buffer: its chunks, laid
/// end to end, and the device it lives on. Made by
/// [`Stream::export`](crate::Stream::export), carried by
/// [`send_shared`] / [`receive_shared`] (or by the runtime itself), taken
/// by [`Device::import`](crate::Device::import).
#[derive(Debug)]
pub struct SharedBuffer {
    /// The exporting device's name (`host:0`, `cuda:1`).
    pub device: String,
    /// The buffer's length in bytes, as reserved.
    pub len: u64,
    /// Its chunks in address order.
    pub chunks: Vec<SharedChunk>,
}

/// A buffer on chunks of its own that [`Stream::export`](crate::Stream::export)
/// can describe to another process. Made by
/// [`Stream::reserve_shareable`](crate::Stream::reserve_shareable); charged
/// to the device's budget; zero when made (padding included). It is not
/// stream-ordered: reads and writes are done on return, and the runtime
/// finishes the work that uses it before dropping it, as with `cudaFree`.
/// Dropping it releases this process's side; importers keep the memory.
#[derive(Debug)]
pub struct ShareableBuffer {
    region: Region,
    device: Arc<DeviceShared>,
    granted: ShareHandles,
}

/// Another process's shareable buffer, mapped into this one by
/// [`Device::import`](crate::Device::import). Not charged to this device's
/// budget (the exporter's holds it). Dropping it unmaps and releases this
/// process's side only.
#[derive(Debug)]
pub struct ImportedBuffer {
    region: Region,
    exporter: String,
}

/// What [`Stream::export`](crate::Stream::export) takes: a
/// [`ShareableBuffer`], or a pooled slice, which it refuses with
/// [`GpuMemError::NotExportable`] (its chunks hold other slices' bytes).
pub trait Exportable: private::Sealed {
    #[doc(hidden)]
    fn shareable(&self) -> Result<&ShareableBuffer>;
}

mod private {
    pub trait Sealed {}
    impl Sealed for super::ShareableBuffer {}
    impl Sealed for mem_pools::ManagedMemoryHandle {}
}

impl Exportable for ShareableBuffer {
    fn shareable(&self) -> Result<&ShareableBuffer> {
        Ok(self)
    }
}

impl Exportable for ManagedMemoryHandle {
    fn shareable(&self) -> Result<&ShareableBuffer> {
        Err(GpuMemError::NotExportable {
            bytes: self.size(),
            reason: "it is a slice of a pool, whose chunks hold (or will hold) other slices",
        })
    }
}

/// What both sides of a share offer, on either buffer type. On the
/// exporter's side:
///
/// ```
/// # use gpumem::prelude::*;
/// let device = Device::host().conf("share:posix_fd")?.ignore_env().build()?;
/// let buffer = device.default_stream().reserve_shareable(MIB + 1)?;
/// assert_eq!((buffer.len(), buffer.mapped_len()), (MIB + 1, 2 * MIB));
/// buffer.write(MIB, &[7])?;
/// let mut out = [0; 2];
/// buffer.read(MIB, &mut out)?; // the padding after the last byte is zero
/// assert_eq!(out, [7, 0]);
/// assert!(buffer.device_ptr() != 0 && !buffer.is_empty());
/// assert!(buffer.write(2 * MIB, &[1]).is_err()); // past the mapped bytes
/// # Ok::<(), GpuMemError>(())
/// ```
macro_rules! byte_access {
    ($ty:ty) => {
        impl $ty {
            /// The buffer's length in bytes.
            pub fn len(&self) -> u64 {
                self.region.len
            }
            /// Whether the buffer is empty (never: a zero-byte one is refused).
            pub fn is_empty(&self) -> bool {
                self.region.len == 0
            }
            /// The bytes mapped, granule padding included (what an importer
            /// can read).
            pub fn mapped_len(&self) -> u64 {
                self.region.mapped_len()
            }
            /// The device address of the first byte: what a kernel is given
            /// (on CUDA it is accessible from this process's device).
            pub fn device_ptr(&self) -> u64 {
                self.region.base().0
            }
            /// Write `data` at `offset`; done on return.
            ///
            /// # Errors
            /// [`GpuMemError::Storage`] past the mapped bytes.
            pub fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
                let at = self.region.at(offset, data.len() as u64)?;
                Ok(self.region.vm.write_mapped(at, data)?)
            }
            /// Read `out.len()` bytes at `offset`, padding included.
            ///
            /// # Errors
            /// [`GpuMemError::Storage`] past the mapped bytes.
            pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<()> {
                let at = self.region.at(offset, out.len() as u64)?;
                Ok(self.region.vm.read_mapped(at, out)?)
            }
        }
    };
}
byte_access!(ShareableBuffer);
byte_access!(ImportedBuffer);

impl ShareableBuffer {
    /// What the driver granted of the asked handle types and flags (FABRIC
    /// or RDMA dropped where it refused them).
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let device = Device::host().conf("share:fabric")?.ignore_env().build()?;
    /// let buffer = device.default_stream().reserve_shareable(MIB)?;
    /// assert!(!buffer.granted().fabric); // a memfd: the POSIX fd alone
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn granted(&self) -> ShareHandles {
        self.granted
    }
}

impl ImportedBuffer {
    /// The name of the device that exported it.
    ///
    /// ```
    /// # use gpumem::prelude::*;
    /// let exporter = Device::host().conf("share:posix_fd")?.ignore_env().build()?;
    /// let stream = exporter.default_stream();
    /// let buffer = stream.reserve_shareable(MIB)?;
    /// let importer = Device::host().ignore_env().build()?;
    /// let view = importer.import(stream.export(&buffer)?)?;
    /// assert_eq!(view.exporter(), "host:0");
    /// # Ok::<(), GpuMemError>(())
    /// ```
    pub fn exporter(&self) -> &str {
        &self.exporter
    }
}

/// The virtual memory shareable buffers are made with, and what to ask for.
fn sharing_vm(device: &DeviceShared) -> Result<(Arc<dyn VirtualMemory>, ShareHandles)> {
    let unavailable = |reason| GpuMemError::SharingUnavailable {
        device: device.name.clone(),
        reason,
    };
    let ask = device
        .config
        .share
        .ok_or_else(|| unavailable("the configuration does not ask for shareable buffers"))?;
    let vm = device
        .virtual_memory
        .clone()
        .ok_or_else(|| unavailable("the device's pools use no virtual memory"))?;
    Ok((vm, ask))
}

/// Chunk sizes for `len` bytes: granule-padded, at most the arenas' largest
/// chunk each (one driver handle per chunk, as a descriptor carries).
fn chunk_sizes(len: u64, granularity: u64, max_chunk: u64) -> Vec<u64> {
    let padded = len.div_ceil(granularity) * granularity;
    let max = (max_chunk / granularity).max(1) * granularity;
    let mut sizes = vec![max; (padded / max) as usize];
    if !padded.is_multiple_of(max) {
        sizes.push(padded % max);
    }
    sizes
}

pub(crate) fn reserve(device: &Arc<DeviceShared>, len: u64) -> Result<ShareableBuffer> {
    let (vm, ask) = sharing_vm(device)?;
    if len == 0 {
        return Err(GpuMemError::NotExportable {
            bytes: 0,
            reason: "a shareable buffer holds at least one byte",
        });
    }
    let max_chunk = device
        .config
        .arena_max_chunk
        .unwrap_or(mem_pools::DEFAULT_MAX_CHUNK);
    // The driver's recommended granularity for chunks of these handle
    // types (what NCCL sizes its chunks by), at least the arenas'.
    let sizes = chunk_sizes(len, vm.share_granularity(ask), max_chunk);
    if sizes.len() > MAX_SHARED_CHUNKS {
        return Err(GpuMemError::NotExportable {
            bytes: len,
            reason: "it would take more chunks than one descriptor carries (253); \
                     raise arena_max_chunk or share it in parts",
        });
    }
    let mut granted = ask;
    let tally = device.sharing.clone();
    let region = Region::build(
        vm.clone(),
        &sizes,
        len,
        Side::Exported,
        tally,
        |_, bytes| {
            let (chunk, got) = vm.create_shareable_chunk(bytes, ask)?;
            granted = got;
            Ok(chunk)
        },
    )?;
    if granted != ask {
        tracing::info!(?ask, ?granted, device = %device.name, "the driver refused part of the share request");
    }
    // A fresh host chunk is a hole in a new memfd and reads zeros; a
    // driver's chunk may hold what this process freed before.
    if vm.backend() != "host" {
        vm.fill_mapped(region.base(), 0, region.mapped_len())?;
    }
    Ok(ShareableBuffer {
        region,
        device: device.clone(),
        granted,
    })
}

pub(crate) fn export(device: &Arc<DeviceShared>, buffer: &impl Exportable) -> Result<SharedBuffer> {
    let buffer = buffer.shareable()?;
    if !Arc::ptr_eq(device, &buffer.device) {
        return Err(GpuMemError::NotExportable {
            bytes: buffer.len(),
            reason: "it belongs to another device than this stream's",
        });
    }
    let r = &buffer.region;
    let mut chunks = Vec::with_capacity(r.chunks.len());
    let mut offset = 0;
    for &(chunk, bytes) in &r.chunks {
        chunks.push(SharedChunk {
            fd: r.vm.export_chunk(chunk)?,
            offset,
            bytes,
            used: bytes.min(r.len.saturating_sub(offset)),
        });
        offset += bytes;
    }
    Ok(SharedBuffer {
        device: device.name.clone(),
        len: r.len,
        chunks,
    })
}

/// The device kind of a name (`cuda` of `cuda:1`).
fn kind(name: &str) -> &str {
    name.split(':').next().unwrap_or(name)
}

/// Check that `shared` lays whole chunks end to end over its length.
fn check(shared: &SharedBuffer, granularity: u64) -> Result<()> {
    let bad = |reason: String| Err(GpuMemError::BadSharedBuffer { reason });
    let n = shared.chunks.len();
    if n == 0 || n > MAX_SHARED_CHUNKS {
        return bad(format!("{n} chunks (expected 1..={MAX_SHARED_CHUNKS})"));
    }
    let mut offset = 0u64;
    for (i, c) in shared.chunks.iter().enumerate() {
        // Every chunk holds bytes of the buffer: padding is never a chunk
        // of its own.
        let used = c.bytes.min(shared.len.saturating_sub(offset));
        if c.offset != offset || c.used != used || used == 0 || !c.bytes.is_multiple_of(granularity)
        {
            return bad(format!(
                "chunk {i} says offset {} bytes {} used {}, expected offset {offset}, a positive \
                 multiple of {granularity} bytes, used {used} (more than 0)",
                c.offset, c.bytes, c.used
            ));
        }
        offset = offset.saturating_add(c.bytes);
    }
    if offset < shared.len {
        return bad(format!(
            "the chunks hold {offset} bytes for a buffer of {} bytes",
            shared.len
        ));
    }
    Ok(())
}

pub(crate) fn import(device: &Arc<DeviceShared>, shared: SharedBuffer) -> Result<ImportedBuffer> {
    let vm = device
        .virtual_memory
        .clone()
        .ok_or(GpuMemError::SharingUnavailable {
            device: device.name.clone(),
            reason: "the device's pools use no virtual memory to map the chunks with",
        })?;
    if kind(&shared.device) != kind(&device.name) {
        return Err(GpuMemError::BadSharedBuffer {
            reason: format!(
                "exported by {}, which {} cannot map",
                shared.device, device.name
            ),
        });
    }
    check(&shared, vm.granularity())?;
    let sizes: Vec<u64> = shared.chunks.iter().map(|c| c.bytes).collect();
    let mut fds: Vec<Option<OwnedFd>> = shared.chunks.into_iter().map(|c| Some(c.fd)).collect();
    let region = Region::build(
        vm.clone(),
        &sizes,
        shared.len,
        Side::Imported,
        device.sharing.clone(),
        |i, bytes| {
            let fd = fds.get_mut(i).and_then(Option::take);
            let fd = fd.ok_or(mem_storage::StorageError::InvalidArgument {
                parameter: "chunk index",
                value: i as u64,
                expected: "each chunk of the descriptor once",
            })?;
            vm.import_chunk(fd, bytes)
        },
    )?;
    Ok(ImportedBuffer {
        region,
        exporter: shared.device,
    })
}

#[cfg(test)]
#[path = "sharing_tests.rs"]
mod tests;
