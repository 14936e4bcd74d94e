//! Chunks made to be shared (`CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR`):
//! a memfd, so that an exported chunk is a file descriptor another
//! process maps, and two processes really share its bytes.
//!
//! The file is one header page, then the chunk's bytes. The header says
//! what the chunk is (size, device, handle types) and whether it was ever
//! exported: an import checks it, so a descriptor of another file, or of
//! a chunk nobody exported, is refused in any process.

use std::os::fd::{BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use rustix::fs::{FileType, MemfdFlags, fstat, ftruncate, memfd_create};
use rustix::io::fcntl_dupfd_cloexec;
use rustix::mm::{MapFlags, ProtFlags, mmap, munmap};

/// The header page before the chunk's bytes.
const PAGE: usize = 4096;
const MAGIC: u64 = u64::from_le_bytes(*b"GPUMSTIN");

/// What a chunk file says about itself.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub magic: u64,
    pub size: u64,
    pub device: u32,
    pub types: u32,
    pub rdma: u32,
    pub exported: u32,
}

/// A chunk file, mapped shared (header and bytes) in this process.
#[derive(Debug)]
pub struct ChunkFile {
    fd: OwnedFd,
    base: NonNull<u8>,
    map_len: usize,
}

// SAFETY: the mapping is owned by the value and unmapped once, in Drop;
// its bytes are device memory, accessed only through raw pointers.
unsafe impl Send for ChunkFile {}
// SAFETY: as for Send: no method hands out references to the bytes.
unsafe impl Sync for ChunkFile {}

fn os(what: &'static str) -> impl Fn(rustix::io::Errno) -> String {
    move |e| format!("{what}: {e}")
}

impl ChunkFile {
    /// A new zeroed chunk of `size` bytes on `device`.
    pub fn create(size: usize, device: usize, types: u32, rdma: bool) -> Result<Self, String> {
        let fd = memfd_create("gpumem-standin-chunk", MemfdFlags::CLOEXEC)
            .map_err(os("memfd_create"))?;
        let map_len = size.checked_add(PAGE).ok_or("chunk size overflows")?;
        ftruncate(&fd, map_len as u64).map_err(os("ftruncate"))?;
        let file = Self::map(fd, map_len)?;
        let header = Header {
            magic: MAGIC,
            size: size as u64,
            device: device as u32,
            types,
            rdma: u32::from(rdma),
            exported: 0,
        };
        // SAFETY: the header page is mapped writable and `Header` fits it.
        unsafe { file.base.as_ptr().cast::<Header>().write_volatile(header) };
        Ok(file)
    }

    fn map(fd: OwnedFd, map_len: usize) -> Result<Self, String> {
        let prot = ProtFlags::READ | ProtFlags::WRITE;
        // SAFETY: a new shared mapping where the kernel chooses; nothing
        // of this process is replaced.
        let base = unsafe {
            mmap(
                std::ptr::null_mut(),
                map_len,
                prot,
                MapFlags::SHARED,
                &fd,
                0,
            )
        }
        .map_err(os("mmap of the chunk file"))?;
        let base = NonNull::new(base.cast::<u8>()).ok_or("mmap gave a null address")?;
        Ok(ChunkFile { fd, base, map_len })
    }

    /// Open a chunk exported by this or another process: `fd` must be a
    /// stand-in chunk file marked exported. The caller keeps `fd`.
    pub fn open(fd: BorrowedFd<'_>) -> Result<Self, String> {
        let stat = fstat(fd).map_err(os("the descriptor"))?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err("the descriptor is not a stand-in chunk (not a memory file)".into());
        }
        let len = usize::try_from(stat.st_size).unwrap_or(0);
        if len <= PAGE {
            return Err(format!(
                "the descriptor's file ({len} B) is no stand-in chunk"
            ));
        }
        let own = fcntl_dupfd_cloexec(fd, 0).map_err(os("dup of the descriptor"))?;
        let file = Self::map(own, len)?;
        let h = file.header();
        if h.magic != MAGIC {
            return Err("the descriptor's file is not a stand-in chunk".into());
        }
        if h.size.checked_add(PAGE as u64) != Some(len as u64) {
            let size = h.size;
            return Err(format!(
                "the chunk says {size} B but its file holds {len} B"
            ));
        }
        if h.exported == 0 {
            return Err("the chunk was never exported (cuMemExportToShareableHandle)".into());
        }
        Ok(file)
    }

    pub fn header(&self) -> Header {
        // SAFETY: the header page is mapped for as long as `self` lives.
        unsafe { self.base.as_ptr().cast::<Header>().read_volatile() }
    }

    /// A new descriptor of the file for another process, the chunk marked
    /// exported (in the file itself, so every process sees it).
    pub fn export(&self) -> Result<OwnedFd, String> {
        let mut h = self.header();
        h.exported = 1;
        // SAFETY: the header page is mapped writable.
        unsafe { self.base.as_ptr().cast::<Header>().write_volatile(h) };
        fcntl_dupfd_cloexec(&self.fd, 0).map_err(os("dup of the chunk file"))
    }

    /// The chunk's bytes (after the header page).
    pub fn data(&self) -> NonNull<u8> {
        // SAFETY: the mapping is `PAGE` plus at least one byte long.
        unsafe { self.base.add(PAGE) }
    }

    pub fn size(&self) -> usize {
        self.map_len - PAGE
    }
}

impl Drop for ChunkFile {
    fn drop(&mut self) {
        // SAFETY: mapped in `map` with this length, unmapped once here;
        // every `Buffer` over it holds this value, so none outlives it.
        let _ = unsafe { munmap(self.base.as_ptr().cast(), self.map_len) };
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;

    #[test]
    fn an_exported_chunk_opens_again_with_its_bytes_and_an_unexported_one_does_not() {
        let file = ChunkFile::create(8192, 1, 1, true).unwrap();
        let never = ChunkFile::open(file.fd.as_fd()).unwrap_err();
        assert!(never.contains("never exported"), "{never}");
        // SAFETY: in bounds of the 8192-byte chunk.
        unsafe { file.data().as_ptr().add(100).write(7) };
        let fd = file.export().unwrap();
        let other = ChunkFile::open(fd.as_fd()).unwrap();
        // SAFETY: the same file, mapped again: the same bytes.
        assert_eq!(unsafe { other.data().as_ptr().add(100).read() }, 7);
        let h = other.header();
        assert_eq!((h.size, h.device, h.types, h.rdma), (8192, 1, 1, 1));
        drop(file);
        // SAFETY: still mapped by `other`, which outlives the original.
        assert_eq!(unsafe { other.data().as_ptr().add(100).read() }, 7);
    }

    #[test]
    fn a_file_that_is_no_chunk_is_refused() {
        let fd = memfd_create("not-a-chunk", MemfdFlags::CLOEXEC).unwrap();
        assert!(ChunkFile::open(fd.as_fd()).unwrap_err().contains("B)"));
        ftruncate(&fd, 3 * PAGE as u64).unwrap();
        let why = ChunkFile::open(fd.as_fd()).unwrap_err();
        assert!(why.contains("not a stand-in chunk"), "{why}");
    }
}
