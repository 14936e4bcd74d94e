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
