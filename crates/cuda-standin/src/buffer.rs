//! Host memory standing in for device memory, and the device address space.
//!
//! A device address is a number in a made-up range (from 2^40 up), never a
//! host address: every access goes through the driver's tables, which turn
//! a device range into [`Segment`]s of [`Buffer`]s. Buffers are zeroed by
//! `calloc` (pages cost nothing until touched) and shared by `Arc`, so work
//! still queued on a stream keeps its bytes alive even when the host frees
//! them: the free is detected (a contract violation), never a host fault.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::memfd::ChunkFile;

/// Zeroed host bytes: heap memory, or a chunk file that other processes
/// may map too.
#[derive(Debug)]
pub struct Buffer {
    ptr: NonNull<u8>,
    len: usize,
    backing: Backing,
}

#[derive(Debug)]
enum Backing {
    Heap(Layout),
    File(ChunkFile),
}

// SAFETY: the buffer owns its allocation; concurrent access to its bytes
// is what device memory allows (stream work racing is the program's race,
// as on a GPU), and every access goes through raw pointers, never references.
unsafe impl Send for Buffer {}
// SAFETY: as for Send: no method hands out references to the bytes.
unsafe impl Sync for Buffer {}

impl Buffer {
    /// `len` zeroed bytes, or `None` when the host cannot provide them.
    pub fn zeroed(len: usize) -> Option<Arc<Self>> {
        // Alignment 16: `alloc_zeroed` is then `calloc`, which maps large
        // sizes lazily instead of writing zeros over them.
        let layout = Layout::from_size_align(len.max(1), 16).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { alloc_zeroed(layout) })?;
        Some(Arc::new(Buffer {
            ptr,
            len,
            backing: Backing::Heap(layout),
        }))
    }

    /// The bytes of a chunk file.
    pub fn file(file: ChunkFile) -> Arc<Self> {
        Arc::new(Buffer {
            ptr: file.data(),
            len: file.size(),
            backing: Backing::File(file),
        })
    }

    /// The chunk file under it, if it is one.
    pub fn chunk_file(&self) -> Option<&ChunkFile> {
        match &self.backing {
            Backing::File(f) => Some(f),
            Backing::Heap(_) => None,
        }
    }

    /// The bytes from `offset` (which must be within the buffer).
    pub fn at(&self, offset: usize) -> *mut u8 {
        assert!(offset <= self.len, "offset past the buffer");
        // SAFETY: in bounds of the allocation (checked just above).
        unsafe { self.ptr.as_ptr().add(offset) }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if let Backing::Heap(layout) = self.backing {
            // SAFETY: allocated in `zeroed` with this layout, freed once
            // here (a chunk file unmaps itself).
            unsafe { dealloc(self.ptr.as_ptr(), layout) }
        }
    }
}

/// A piece of a device range: `len` bytes of `buf` from `offset`, owned by
/// the allocation or mapping `owner` (checked again when work executes).
#[derive(Debug, Clone)]
pub struct Segment {
    pub owner: u64,
    /// The device whose work touches it.
    pub device: usize,
    pub buf: Arc<Buffer>,
    pub offset: usize,
    pub len: usize,
}

/// Where device addresses start (no host pointer is mistaken for one).
const BASE: u64 = 1 << 40;
/// How much address space there is (16 TiB).
const SPAN: u64 = 1 << 44;

/// First-fit allocator of device addresses, coalescing on free.
#[derive(Debug)]
pub struct AddressSpace {
    free: BTreeMap<u64, u64>,
}

impl Default for AddressSpace {
    fn default() -> Self {
        AddressSpace {
            free: BTreeMap::from([(BASE, SPAN)]),
        }
    }
}

impl AddressSpace {
    /// `len` addresses aligned to `align` (a power of two).
    pub fn take(&mut self, len: u64, align: u64) -> Option<u64> {
        let (start, base, size) = self.free.iter().find_map(|(&start, &size)| {
            let base = start.checked_add(align - 1)? & !(align - 1);
            (base.checked_add(len)? <= start + size).then_some((start, base, size))
        })?;
        self.free.remove(&start);
        if base > start {
            self.free.insert(start, base - start);
        }
        let end = base + len;
        if end < start + size {
            self.free.insert(end, start + size - end);
        }
        Some(base)
    }

    /// Give `base..base+len` back.
    pub fn give(&mut self, base: u64, len: u64) {
        let mut start = base;
        let mut size = len;
        if let Some((&prev, &prev_len)) = self.free.range(..base).next_back()
            && prev + prev_len == base
        {
            self.free.remove(&prev);
            start = prev;
            size += prev_len;
        }
        if let Some(next_len) = self.free.remove(&(base + len)) {
            size += next_len;
        }
        self.free.insert(start, size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_addresses_are_handed_out_again_and_neighbours_coalesce() {
        let mut va = AddressSpace::default();
        let a = va.take(4096, 512).unwrap();
        let b = va.take(4096, 512).unwrap();
        assert_eq!(b, a + 4096);
        va.give(a, 4096);
        assert_eq!(va.take(1024, 512), Some(a), "first fit reuses the hole");
        va.give(a, 1024);
        va.give(b, 4096);
        assert_eq!(va.free.len(), 1, "everything coalesced: {:?}", va.free);
        let big = va.take(2 << 20, 2 << 20).unwrap();
        assert_eq!(big % (2 << 20), 0);
    }
}
