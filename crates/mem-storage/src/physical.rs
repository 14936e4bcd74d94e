//! `PhysicalMemory`: one device's physical capacity, shared by its pages
//! and its chunks.
//!
//! A GPU has one pool of physical memory that `cuMemAlloc` (pages of a
//! [`DeviceResource`](crate::DeviceResource)) and `cuMemCreate` (chunks of a
//! [`VirtualMemory`](crate::VirtualMemory)) both draw from: memory held as
//! chunks is not there for pages, and the reverse. The host and simulated
//! backends model that with this counter. A resource owns one, and the
//! virtual memory made from it (`SimulatedResource::virtual_memory`,
//! `HostResource::virtual_memory`) holds the same `Arc`, so every page and
//! every chunk claims its bytes here: together they never exceed the
//! device's size, and `mem_info` / `physical_info` report free memory that
//! accounts for both. A virtual memory built on its own (`::new`,
//! `::with_capacity`) gets a counter of its own, as before.
//!
//! Cost: one compare-and-swap per claim and one per release. It replaces
//! the counter each backend kept under its own lock, so a page allocation
//! does no more work than before. Refusals are the backend's own typed
//! [`StorageError::OutOfMemory`] / [`StorageError::TooBig`] with
//! `refused_by: Refuser::Device`, so callers and retry loops see a full
//! device exactly as they did.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::error::{Refuser, StorageError};
use crate::resource::MemInfo;

/// The physical memory of one device: a total and the bytes held of it.
#[derive(Debug)]
pub struct PhysicalMemory {
    total: u64,
    /// Bytes held by every page and chunk drawn from this memory. Only
    /// claims and releases change it; nothing else is published through
    /// it, so relaxed ordering is enough (each CAS is still atomic).
    used: AtomicU64,
}

impl PhysicalMemory {
    /// `total` bytes of physical memory, none of it held.
    pub fn new(total: u64) -> Arc<Self> {
        Arc::new(Self {
            total,
            used: AtomicU64::new(0),
        })
    }

    /// Bytes the device has in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes held now, by pages and chunks together.
    pub fn used(&self) -> u64 {
        self.used.load(Relaxed)
    }

    /// Free and total bytes, pages and chunks both counted.
    pub fn mem_info(&self) -> MemInfo {
        let used = self.used();
        MemInfo {
            free: self.total.saturating_sub(used),
            total: self.total,
        }
    }

    /// Claim `bytes` for a page or chunk about to be made by `backend`.
    /// More than the whole device is `TooBig` (never fits); more than is
    /// free now is a retryable `OutOfMemory` with the free bytes seen.
    /// A refusal changes nothing.
    pub(crate) fn claim(&self, backend: &'static str, bytes: u64) -> Result<(), StorageError> {
        if bytes > self.total {
            return Err(StorageError::TooBig {
                backend,
                refused_by: Refuser::Device,
                requested: bytes,
                max: self.total,
            });
        }
        let fits = |used: u64| used.checked_add(bytes).filter(|&t| t <= self.total);
        self.used
            .fetch_update(Relaxed, Relaxed, fits)
            .map(drop)
            .map_err(|used| StorageError::OutOfMemory {
                backend,
                refused_by: Refuser::Device,
                requested: bytes,
                free: self.total.saturating_sub(used),
                total: self.total,
            })
    }

    /// Give back `bytes` of an earlier claim (a page or chunk freed, or a
    /// claim whose allocation failed). Callers release only what they
    /// claimed; should that ever break, the count stays at zero rather
    /// than wrap round and report a full device as empty.
    pub(crate) fn release(&self, bytes: u64) {
        let sub = |used: u64| Some(used.saturating_sub(bytes));
        // `sub` always answers, so the update always happens.
        let before = self.used.fetch_update(Relaxed, Relaxed, sub);
        let before = before.unwrap_or_else(|used| used);
        if before < bytes {
            tracing::error!(
                bytes,
                held = before,
                "released more physical memory than is held; counting none"
            );
        }
    }
}

/// Bytes claimed for a chunk whose creation has not been recorded yet:
/// given back when dropped, unless the virtual-memory table takes it with
/// the chunk (`VmTable::add_chunk`). So a system or driver call that fails
/// between the check and the record leaves the count as it was.
#[derive(Debug)]
#[must_use = "a claim dropped unused gives its bytes back"]
pub(crate) struct ChunkClaim {
    memory: Arc<PhysicalMemory>,
    bytes: u64,
}

impl ChunkClaim {
    /// Claim `bytes` of `memory` for a chunk of `backend`.
    pub(crate) fn new(
        memory: &Arc<PhysicalMemory>,
        backend: &'static str,
        bytes: u64,
    ) -> Result<Self, StorageError> {
        memory.claim(backend, bytes)?;
        Ok(Self {
            memory: Arc::clone(memory),
            bytes,
        })
    }

    /// The bytes claimed.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The chunk exists: its bytes stay held until it is released.
    pub(crate) fn keep(mut self) -> u64 {
        // Nothing left to give back on drop.
        std::mem::take(&mut self.bytes)
    }
}

impl Drop for ChunkClaim {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.memory.release(self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_fits_or_is_refused_with_the_numbers_and_changes_nothing() {
        let memory = PhysicalMemory::new(1000);
        memory.claim("t", 600).unwrap();
        let err = memory.claim("t", 500).unwrap_err();
        assert!(matches!(
            err,
            StorageError::OutOfMemory {
                refused_by: Refuser::Device,
                requested: 500,
                free: 400,
                total: 1000,
                ..
            }
        ));
        let err = memory.claim("t", 1001).unwrap_err();
        assert!(matches!(err, StorageError::TooBig { max: 1000, .. }));
        assert_eq!(memory.used(), 600);
        memory.claim("t", 400).unwrap();
        assert_eq!(
            memory.mem_info(),
            MemInfo {
                free: 0,
                total: 1000
            }
        );
        memory.release(1000);
        assert_eq!(memory.used(), 0);
    }

    #[test]
    fn a_chunk_claim_dropped_unkept_gives_its_bytes_back() {
        let memory = PhysicalMemory::new(1000);
        // As when the system or driver call after the check fails.
        drop(ChunkClaim::new(&memory, "t", 300).unwrap());
        assert_eq!(memory.used(), 0);
        let kept = ChunkClaim::new(&memory, "t", 300).unwrap().keep();
        assert_eq!((kept, memory.used()), (300, 300));
        assert!(ChunkClaim::new(&memory, "t", 800).is_err());
        assert_eq!(memory.used(), 300, "a refused claim holds nothing");
    }

    #[test]
    fn releasing_more_than_is_held_counts_none_instead_of_wrapping() {
        let memory = PhysicalMemory::new(1000);
        memory.claim("t", 100).unwrap();
        memory.release(200);
        assert_eq!(
            memory.mem_info(),
            MemInfo {
                free: 1000,
                total: 1000
            }
        );
    }
}
