//! Sharing chunks: export as a POSIX file descriptor, import one, and the
//! queries a sharer makes (a chunk's properties, the handle under an
//! address, an address's allocation range).
//!
//! - a chunk exports only as a handle type it was created with;
//! - an import takes only a stand-in chunk that was exported (`memfd.rs`
//!   checks the file, in whatever process made it);
//! - an imported chunk is the exporter's memory: it is not charged to this
//!   process's device, and lives on (the file and its mapping) after the
//!   exporter releases its own handle, as the driver's reference counts do.

use std::os::fd::{BorrowedFd, OwnedFd};

use crate::buffer::Buffer;
use crate::memfd::ChunkFile;
use crate::memory::{Handle, Mapping, MemState, Refusal};
use crate::types::{DevPtr, HANDLE_POSIX_FD, INVALID_DEVICE, INVALID_VALUE, NOT_FOUND};

impl MemState {
    /// A new descriptor of chunk `handle`, which must have been created
    /// shareable as a POSIX file descriptor.
    pub fn export(&self, handle: u64) -> Result<OwnedFd, Refusal> {
        let h = match self.handles.get(&handle) {
            Some(h) if h.refs > 0 => h,
            _ => {
                let why = format!("{handle:#x} is no live allocation handle");
                return Err((INVALID_VALUE, why));
            }
        };
        let file = match h.buf.chunk_file() {
            Some(file) if h.types & HANDLE_POSIX_FD != 0 => file,
            _ => {
                let why = format!(
                    "chunk {handle:#x} was created without CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR (requestedHandleTypes {:#x})",
                    h.types
                );
                return Err((INVALID_VALUE, why));
            }
        };
        file.export().map_err(|why| (INVALID_VALUE, why))
    }

    /// A handle of the chunk behind `fd` (the caller keeps `fd`), which must
    /// be a stand-in chunk that was exported.
    pub fn import(&mut self, fd: BorrowedFd<'_>) -> Result<u64, Refusal> {
        let file = ChunkFile::open(fd).map_err(|why| (INVALID_VALUE, why))?;
        let header = file.header();
        let device = header.device as usize;
        if crate::device::valid(header.device as i32).is_err() {
            let why =
                format!("the chunk lives on device {device}, which this process does not have");
            return Err((INVALID_DEVICE, why));
        }
        Ok(self.add_handle(Handle {
            size: header.size,
            buf: Buffer::file(file),
            mappings: 0,
            refs: 1,
            device,
            types: header.types,
            rdma: header.rdma != 0,
            imported: true,
        }))
    }

    /// `(device, requested handle types, RDMA capable)` of a live chunk.
    pub fn properties(&self, handle: u64) -> Option<(usize, u32, bool)> {
        let h = self.handles.get(&handle).filter(|h| h.refs > 0)?;
        Some((h.device, h.types, h.rdma))
    }

    /// The handle of the chunk mapped at `addr`, with one more reference
    /// (released with `cuMemRelease`).
    pub fn retain(&mut self, addr: DevPtr) -> Result<u64, Refusal> {
        let handle = self
            .mapping_at(addr)
            .ok_or_else(|| (INVALID_VALUE, format!("{addr:#x} is not mapped")))?
            .1
            .handle;
        let h = self
            .handles
            .get_mut(&handle)
            .ok_or((INVALID_VALUE, format!("{addr:#x}'s chunk is gone")))?;
        h.refs += 1;
        Ok(handle)
    }

    /// The allocation or mapping holding `addr`: `(base, size)`.
    pub fn address_range(&self, addr: DevPtr) -> Result<(DevPtr, u64), Refusal> {
        if let Some((&base, a)) = self.allocs.range(..=addr).next_back()
            && addr < base + a.len.max(1)
        {
            return Ok((base, a.len));
        }
        let (at, m) = self
            .mapping_at(addr)
            .ok_or_else(|| (NOT_FOUND, format!("{addr:#x} is no allocation")))?;
        Ok((at, m.len))
    }

    /// Whether device `dev` may access the mapping holding `addr`.
    pub fn access_of(&self, addr: DevPtr, dev: usize) -> Result<bool, Refusal> {
        let (_, m) = self
            .mapping_at(addr)
            .ok_or_else(|| (INVALID_VALUE, format!("{addr:#x} is not mapped")))?;
        Ok(self.reaches(m.owner, dev) == Some(true))
    }

    /// The mapping holding `addr`, and its address.
    fn mapping_at(&self, addr: DevPtr) -> Option<(DevPtr, &Mapping)> {
        let (_, r) = self.reservations.range(..=addr).next_back()?;
        let (&at, m) = r.maps.range(..=addr).next_back()?;
        (addr < at + m.len).then_some((at, m))
    }
}

#[cfg(test)]
#[path = "share_tests.rs"]
mod tests;
