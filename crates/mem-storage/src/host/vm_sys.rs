//! The system calls of [`crate::HostVirtualMemory`], one function each.
//!
//! Why rustix and not libc: its calls take and return typed values (`OwnedFd`,
//! `Errno`, flag sets) and are `unsafe` only where memory is at stake
//! (`mmap`, `munmap`), so the unsafe surface here is exactly the address
//! juggling, each with its own `SAFETY` argument. Errors become
//! [`StorageError::Os`] with the errno, or [`StorageError::NoAddressSpace`]
//! when the kernel has no room for a reservation.

use std::os::fd::OwnedFd;
use std::ptr::{self, NonNull};

use rustix::fs::{self, FallocateFlags, MemfdFlags};
use rustix::io::Errno;
use rustix::mm::{self, MapFlags, ProtFlags};

use crate::error::StorageError;

fn os(operation: &'static str) -> impl FnOnce(Errno) -> StorageError {
    move |e| StorageError::Os {
        operation,
        errno: e.raw_os_error(),
    }
}

/// The OS page size in bytes.
pub(crate) fn page_size() -> u64 {
    rustix::param::page_size() as u64
}

/// A fresh, empty memfd (closed on exec).
pub(crate) fn memfd() -> Result<OwnedFd, StorageError> {
    fs::memfd_create("gpumem-vm", MemfdFlags::CLOEXEC).map_err(os("memfd_create"))
}

/// Set the memfd's length (growing it is free: the new bytes are a hole).
pub(crate) fn set_len(fd: &OwnedFd, len: u64) -> Result<(), StorageError> {
    fs::ftruncate(fd, len).map_err(os("ftruncate of the chunk memfd"))
}

/// Give the memory under `offset..offset+len` of the memfd back to the OS.
pub(crate) fn punch(fd: &OwnedFd, offset: u64, len: u64) -> Result<(), StorageError> {
    let mode = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
    fs::fallocate(fd, mode, offset, len).map_err(os("fallocate(PUNCH_HOLE) of a released chunk"))
}

fn reservation_error(requested: u64) -> impl FnOnce(Errno) -> StorageError {
    move |e| match e {
        Errno::NOMEM => StorageError::NoAddressSpace {
            backend: "host",
            requested,
        },
        e => os("mmap of a reservation")(e),
    }
}

/// Reserve `len` bytes of inaccessible addresses aligned to `align` (a
/// power of two, at least the page size): over-reserve by `align - page`
/// and trim both ends, since `mmap` only promises page alignment.
pub(crate) fn reserve(len: usize, align: usize) -> Result<NonNull<u8>, StorageError> {
    let too_big = || reservation_error(len as u64)(Errno::NOMEM);
    let total = len
        .checked_add(align - page_size() as usize)
        .ok_or_else(too_big)?;
    let flags = MapFlags::PRIVATE | MapFlags::NORESERVE;
    // SAFETY: a null hint without MAP_FIXED makes the kernel pick addresses
    // no one uses; PROT_NONE memory cannot be read or written through.
    let raw = unsafe { mm::mmap_anonymous(ptr::null_mut(), total, ProtFlags::empty(), flags) }
        .map_err(reservation_error(len as u64))?
        .cast::<u8>();
    let head = (raw as usize).next_multiple_of(align) - raw as usize;
    let tail = total - head - len;
    // SAFETY: both trimmed pieces lie inside the mapping made just above,
    // are page-aligned (head and tail are multiples of the page size) and
    // nothing refers to them.
    let trimmed = unsafe {
        let front = if head > 0 {
            mm::munmap(raw.cast(), head)
        } else {
            Ok(())
        };
        front.and_then(|()| match tail {
            0 => Ok(()),
            _ => mm::munmap(raw.add(head + len).cast(), tail),
        })
    };
    if let Err(e) = trimmed {
        // SAFETY: the whole mapping is ours and unreferenced; giving it back
        // (whatever trimming managed) leaves nothing behind.
        let _ = unsafe { mm::munmap(raw.cast(), total) };
        return Err(os("munmap while aligning a reservation")(e));
    }
    // SAFETY: `head < total` and `raw` is non-null (mmap succeeded).
    Ok(unsafe { NonNull::new_unchecked(raw.add(head)) })
}

/// Give a reservation's addresses back, with whatever is mapped in it.
///
/// # Safety
/// `base..base+len` must be a whole reservation made by [`reserve`], not
/// given back before, and no reference into it may be alive.
pub(crate) unsafe fn release(base: NonNull<u8>, len: usize) -> Result<(), StorageError> {
    // SAFETY: the caller guarantees a whole, unreferenced reservation.
    unsafe { mm::munmap(base.as_ptr().cast(), len) }.map_err(os("munmap of a range"))
}

/// Map `len` bytes of the memfd at `offset` over `addr`, shared and
/// writable. On failure the addresses are made a reservation again.
///
/// # Safety
/// `addr..addr+len` must lie inside a live reservation of this process,
/// page-aligned, with nothing mapped there and no reference into it.
pub(crate) unsafe fn map_chunk(
    addr: NonNull<u8>,
    len: usize,
    fd: &OwnedFd,
    offset: u64,
) -> Result<(), StorageError> {
    let prot = ProtFlags::READ | ProtFlags::WRITE;
    let flags = MapFlags::SHARED | MapFlags::FIXED;
    // SAFETY: MAP_FIXED replaces only the caller's own, unreferenced,
    // inaccessible reservation pages at `addr`.
    let mapped = unsafe { mm::mmap(addr.as_ptr().cast(), len, prot, flags, fd, offset) };
    match mapped {
        Ok(_) => Ok(()),
        Err(e) => {
            // A failed MAP_FIXED may have removed the old pages: put the
            // reservation back so no one else's mmap can land there.
            // SAFETY: as above, the pages are the caller's reservation.
            let _ = unsafe { unmap_chunk(addr, len) };
            Err(os("mmap of a chunk")(e))
        }
    }
}

/// Turn mapped pages back into reservation (the chunk keeps its bytes in
/// the memfd).
///
/// # Safety
/// `addr..addr+len` must lie inside a live reservation of this process,
/// page-aligned, with no reference into it.
pub(crate) unsafe fn unmap_chunk(addr: NonNull<u8>, len: usize) -> Result<(), StorageError> {
    let flags = MapFlags::PRIVATE | MapFlags::FIXED | MapFlags::NORESERVE;
    // SAFETY: MAP_FIXED replaces only the caller's own, unreferenced pages
    // with inaccessible ones.
    unsafe { mm::mmap_anonymous(addr.as_ptr().cast(), len, ProtFlags::empty(), flags) }
        .map(drop)
        .map_err(os("mmap(PROT_NONE) over an unmapped chunk"))
}

/// A memfd of exactly `len` bytes for one shareable chunk, sealed so that
/// its size never changes: an importer maps it, and a file shrunk under a
/// mapping makes every access past the new end a SIGBUS. The seals cannot
/// be removed (`F_SEAL_SEAL`), so an importer that finds them may trust
/// them.
pub(crate) fn sealed_memfd(len: u64) -> Result<OwnedFd, StorageError> {
    let fd = fs::memfd_create(
        "gpumem-shared",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )
    .map_err(os("memfd_create of a shareable chunk"))?;
    set_len(&fd, len)?;
    fs::fcntl_add_seals(&fd, SIZE_SEALS | fs::SealFlags::SEAL)
        .map_err(os("sealing a shareable chunk's memfd"))?;
    Ok(fd)
}

/// The seals a shareable chunk's memfd carries.
const SIZE_SEALS: fs::SealFlags = fs::SealFlags::SHRINK.union(fs::SealFlags::GROW);

/// A second descriptor of the same file (closed on exec).
pub(crate) fn duplicate(fd: &OwnedFd) -> Result<OwnedFd, StorageError> {
    rustix::io::fcntl_dupfd_cloexec(fd, 0).map_err(os("dup of a shareable chunk's memfd"))
}

/// Whether `fd` can be a chunk of `bytes` another process exported: a
/// memfd sealed against shrinking and growing, of exactly `bytes`. A pipe,
/// a socket, a file on disk, an unsealed memfd (its owner could shrink it
/// under the mapping) or a file of another size is refused before anything
/// maps it.
pub(crate) fn check_memfd(fd: &OwnedFd, bytes: u64) -> Result<(), StorageError> {
    let bad = |reason, found| StorageError::BadShareHandle {
        reason,
        expected: bytes,
        found,
    };
    let st =
        fs::fstat(fd).map_err(|_| bad("the descriptor cannot be inspected (fstat failed)", 0))?;
    if fs::FileType::from_raw_mode(st.st_mode) != fs::FileType::RegularFile {
        return Err(bad(
            "the descriptor is not a memory file (a pipe, socket or device)",
            0,
        ));
    }
    let found = u64::try_from(st.st_size).unwrap_or(0);
    let seals = fs::fcntl_get_seals(fd).unwrap_or(fs::SealFlags::empty());
    if !seals.contains(SIZE_SEALS) {
        return Err(bad(
            "the file is not a memfd sealed against resizing",
            found,
        ));
    }
    if found != bytes {
        return Err(bad("the file's size is not the chunk's", found));
    }
    Ok(())
}
