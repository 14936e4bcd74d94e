//! The plain values of virtual memory: range and chunk ids, a reserved
//! range, and the counters every backend keeps.
//!
//! Ids are never reused (like [`crate::StorageId`]), so an id kept past
//! its free or release is detected as stale instead of naming a newer
//! range or chunk. Range ids count from 1. A chunk id names its slot in
//! the backend's table — slot + 1 in the low 32 bits, the slot's
//! generation above — so it is found in O(1); the first chunks are 1, 2,
//! 3, ... as with a counter, and a reused slot gets a new generation.

use std::fmt;

use crate::id::DevicePtr;

/// Identifies one reserved virtual address range of a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RangeId(pub u64);

impl fmt::Display for RangeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "range #{}", self.0)
    }
}

/// Identifies one physical chunk of a backend (CUDA: a
/// `CUmemGenericAllocationHandle`; host: a region of the backing memfd).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChunkId(pub u64);

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chunk #{}", self.0)
    }
}

/// A reserved virtual address range: addresses only, no memory behind them
/// until chunks are mapped into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VaRange {
    /// Its id, for [`crate::VirtualMemory::map`] and friends.
    pub id: RangeId,
    /// First address; aligned to the backend's granularity.
    pub base: DevicePtr,
    /// Bytes reserved; a multiple of the granularity.
    pub len: u64,
}

impl VaRange {
    /// The address `offset` bytes into the range, or `None` past its end.
    pub fn at(&self, offset: u64) -> Option<DevicePtr> {
        if offset <= self.len {
            self.base.checked_add(offset)
        } else {
            None
        }
    }
}

/// What a virtual-memory backend (or a [`crate::StatsResource`] over one)
/// has done: lifecycle counts, the bytes held now, and their peaks.
///
/// `maps` and `unmaps` count chunk mappings made and removed (an `unmap`
/// spanning three chunks counts three), so `maps - unmaps` is the number of
/// chunks mapped now. Only successful calls move the counts and bytes;
/// refusals are counted apart in `refused_calls`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VirtualMemoryStats {
    /// Ranges reserved, ever.
    pub ranges_reserved: u64,
    /// Ranges freed, ever.
    pub ranges_freed: u64,
    /// Bytes of virtual address space reserved now.
    pub virtual_bytes: u64,
    /// Chunks created, ever.
    pub chunks_created: u64,
    /// Chunks released, ever.
    pub chunks_released: u64,
    /// Bytes of physical chunks that exist now, mapped or not.
    pub physical_bytes: u64,
    /// Highest `physical_bytes` so far.
    pub peak_physical_bytes: u64,
    /// Chunk mappings made, ever.
    pub maps: u64,
    /// Chunk mappings removed, ever.
    pub unmaps: u64,
    /// Bytes mapped now.
    pub mapped_bytes: u64,
    /// Highest `mapped_bytes` so far.
    pub peak_mapped_bytes: u64,
    /// Reserve, free, create, release, map and unmap calls refused.
    pub refused_calls: u64,
    /// Modeled driver calls and time of the device, when a
    /// [`crate::DriverCostResource`] is installed over it (zero otherwise):
    /// pages and chunks together, as the device pays them.
    pub driver: crate::DriverTime,
}

impl VirtualMemoryStats {
    /// Ranges reserved and not yet freed.
    pub fn live_ranges(&self) -> u64 {
        self.ranges_reserved.saturating_sub(self.ranges_freed)
    }

    /// Chunks created and not yet released.
    pub fn live_chunks(&self) -> u64 {
        self.chunks_created.saturating_sub(self.chunks_released)
    }

    /// Chunks mapped now.
    pub fn live_mappings(&self) -> u64 {
        self.maps.saturating_sub(self.unmaps)
    }

    /// Whether nothing is held: no range, no chunk, no mapping.
    pub fn is_idle(&self) -> bool {
        self.live_ranges() == 0
            && self.live_chunks() == 0
            && self.virtual_bytes == 0
            && self.physical_bytes == 0
            && self.mapped_bytes == 0
    }
}
