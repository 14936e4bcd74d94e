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

mod ops;
mod region;
mod wire;

use std::os::fd::OwnedFd;
use std::sync::Arc;

use mem_pools::ManagedMemoryHandle;
use mem_storage::{ShareHandles, VirtualMemory};

use crate::error::{GpuMemError, Result};
use crate::shared::DeviceShared;
use region::Region;

pub(crate) use ops::{export, import, reserve};
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

#[cfg(test)]
#[path = "sharing_tests.rs"]
mod tests;
