//! The system allocator as a churn peer: `malloc`/`free` on real host
//! memory, the baseline every pool is meant to beat.
//!
//! It allocates with the platform's default alignment (16 bytes), as plain
//! `malloc` does: asking for the device's 256 bytes would measure
//! `posix_memalign`, a slower path no one calls "the system allocator".
//! Sizes above glibc's mmap threshold are `mmap`/`munmap` calls, which is
//! what a caching allocator saves on a device too.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::NonNull;

use super::ChurnPeer;
use crate::{BenchError, Result};

/// Alignment of the system allocator's blocks.
const ALIGN: usize = 16;

/// One live block.
#[derive(Debug)]
pub struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

/// Allocates `size` bytes (at least 1) from the system allocator.
pub fn system_alloc(size: u64) -> Result<Block> {
    let bytes = usize::try_from(size.max(1)).map_err(|_| BenchError::Unrepresentable {
        peer: "system",
        size,
        reason: "larger than the address space",
    })?;
    let layout =
        Layout::from_size_align(bytes, ALIGN).map_err(|_| BenchError::Unrepresentable {
            peer: "system",
            size,
            reason: "larger than isize::MAX once aligned",
        })?;
    // SAFETY: `layout` has a nonzero size (at least 1 byte, above).
    let ptr = unsafe { System.alloc(layout) };
    let ptr = NonNull::new(ptr).ok_or(BenchError::SystemOutOfMemory { size })?;
    Ok(Block { ptr, layout })
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `System.alloc(layout)` in `system_alloc`
        // and a `Block` is freed exactly once, here.
        unsafe { System.dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// `malloc`/`free`, one block per slot.
#[derive(Debug, Default)]
pub struct SystemPeer {
    slots: Vec<Option<Block>>,
    live: usize,
}

impl SystemPeer {
    /// No blocks, room for `slots` slots.
    pub fn new(slots: usize) -> Self {
        SystemPeer {
            slots: Vec::with_capacity(slots),
            live: 0,
        }
    }
}

impl ChurnPeer for SystemPeer {
    fn name(&self) -> &'static str {
        "system"
    }

    fn fill(&mut self, sizes: &[u64]) -> Result<()> {
        for &size in sizes {
            self.slots.push(Some(system_alloc(size)?));
            self.live += 1;
        }
        Ok(())
    }

    fn replace(&mut self, slot: usize, size: u64) -> Result<()> {
        if self.slots.get_mut(slot).and_then(Option::take).is_some() {
            self.live -= 1;
        }
        let block = system_alloc(size)?;
        if let Some(entry) = self.slots.get_mut(slot) {
            *entry = Some(block);
            self.live += 1;
        }
        Ok(())
    }

    fn pair(&mut self, size: u64) -> Result<()> {
        drop(std::hint::black_box(system_alloc(size)?));
        Ok(())
    }

    fn live(&self) -> usize {
        self.live
    }
}
