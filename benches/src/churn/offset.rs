//! `offset-allocator` as a churn peer: the bare O(1) peer (two-level
//! bitmap bins, neighbour links), managing offsets only.
//!
//! Its sizes are `u32` units, so it counts in units of the device's
//! 256-byte alignment: 80 GiB is 335 M units, well inside `u32`. The unit
//! and the heap are the `gpumem` command's ([`gpumem_replay::compare`]), so
//! the churn peer and the replay peer are built the same way.

use offset_allocator::{Allocation, Allocator};

pub use gpumem_replay::compare::{UNIT, offset_allocator};

use super::ChurnPeer;
use crate::{BenchError, DEVICE_BYTES, Result};

/// `offset-allocator` over the 80 GiB device, one allocation per slot.
pub struct OffsetPeer {
    allocator: Allocator<u32>,
    slots: Vec<Option<Allocation<u32>>>,
    live: usize,
}

impl std::fmt::Debug for OffsetPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffsetPeer")
            .field("live", &self.live)
            .finish()
    }
}

/// `bytes` in units, rounded up; an error if it does not fit `u32`.
pub fn units(bytes: u64) -> Result<u32> {
    gpumem_replay::compare::units(bytes).ok_or(BenchError::Unrepresentable {
        peer: "offset-allocator",
        size: bytes,
        reason: "more than u32::MAX units of 256 bytes",
    })
}

impl OffsetPeer {
    /// An empty allocator with nodes for `slots` live allocations (plus
    /// slack for pairs and fragments).
    pub fn new(slots: usize) -> Self {
        OffsetPeer {
            allocator: offset_allocator(DEVICE_BYTES, slots.saturating_mul(2)),
            slots: Vec::with_capacity(slots),
            live: 0,
        }
    }

    fn allocate(&mut self, size: u64) -> Result<Allocation<u32>> {
        self.allocator
            .allocate(units(size)?)
            .ok_or(BenchError::OffsetFull {
                size,
                live: self.live,
            })
    }
}

impl ChurnPeer for OffsetPeer {
    fn name(&self) -> &'static str {
        "offset-allocator"
    }

    fn fill(&mut self, sizes: &[u64]) -> Result<()> {
        for &size in sizes {
            let allocation = self.allocate(size)?;
            self.slots.push(Some(allocation));
            self.live += 1;
        }
        Ok(())
    }

    fn replace(&mut self, slot: usize, size: u64) -> Result<()> {
        if let Some(old) = self.slots.get_mut(slot).and_then(Option::take) {
            self.allocator.free(old);
            self.live -= 1;
        }
        let allocation = self.allocate(size)?;
        if let Some(entry) = self.slots.get_mut(slot) {
            *entry = Some(allocation);
            self.live += 1;
        } else {
            self.allocator.free(allocation);
        }
        Ok(())
    }

    fn pair(&mut self, size: u64) -> Result<()> {
        let allocation = self.allocate(size)?;
        self.allocator.free(std::hint::black_box(allocation));
        Ok(())
    }

    fn live(&self) -> usize {
        self.live
    }
}
