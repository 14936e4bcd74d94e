//! `offset-allocator` as a replay backend: the bare O(1) arena peer
//! (two-level bitmap bins, neighbour links) that manages offsets in one
//! fixed heap and never talks to a device after creating it.
//!
//! It is the lower bound of bookkeeping cost and shows what a heap with
//! no pages or chunks reserves: its **reserved bytes are the heap's
//! high-water extent** (the largest end offset handed out), what a device
//! would have to back for it, and that extent never shrinks. One copy
//! lives here so that `gpumem compare` and the benchmark tables
//! (`gpumem-benches`) measure the same peer.
//!
//! Sizes are `u32` units of the device's 256-byte alignment, so one heap
//! spans at most `u32::MAX` units (just under 1 TiB); a larger device is
//! capped there.

use offset_allocator::{Allocation, Allocator};

use crate::error::{ReplayError, Result};
use crate::replay::AllocBackend;

/// Bytes per `offset-allocator` unit (the simulated device's alignment).
pub const UNIT: u64 = 256;

const NAME: &str = "offset-allocator";

/// `bytes` in units, rounded up (at least one); `None` past `u32::MAX`.
pub fn units(bytes: u64) -> Option<u32> {
    u32::try_from(bytes.div_ceil(UNIT).max(1)).ok()
}

/// An allocator over `bytes` bytes (capped at `u32::MAX` units) with room
/// for `max_allocs` live allocations plus slack for the fragments it
/// splits off.
pub fn offset_allocator(bytes: u64, max_allocs: usize) -> Allocator<u32> {
    let size = u32::try_from(bytes / UNIT).unwrap_or(u32::MAX);
    // offset-allocator asserts max_allocs < u32::MAX - 1; stay well below.
    let max_allocs = u32::try_from(max_allocs.saturating_add(1024))
        .unwrap_or(u32::MAX)
        .min(u32::MAX - 2);
    Allocator::with_max_allocs(size, max_allocs)
}

/// `offset-allocator` over one heap the size of the device.
pub struct OffsetBackend {
    allocator: Allocator<u32>,
    capacity: u64,
    live: u64,
    live_count: usize,
    extent: u64,
}

impl std::fmt::Debug for OffsetBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffsetBackend")
            .field("capacity", &self.capacity)
            .field("live", &self.live)
            .field("extent", &self.extent)
            .finish()
    }
}

impl OffsetBackend {
    /// An empty heap of `capacity` bytes with nodes for `max_live` live
    /// allocations (a compiled program's `slots`).
    pub fn new(capacity: u64, max_live: usize) -> Self {
        OffsetBackend {
            allocator: offset_allocator(capacity, max_live),
            capacity: capacity.min(u64::from(u32::MAX) * UNIT),
            live: 0,
            live_count: 0,
            extent: 0,
        }
    }

    fn refuse(&self, message: String) -> ReplayError {
        ReplayError::Backend {
            backend: NAME,
            message,
        }
    }
}

/// A live `offset-allocator` reservation and its requested size.
#[derive(Clone, Copy)]
pub struct OffsetToken {
    allocation: Allocation<u32>,
    size: u64,
}

impl std::fmt::Debug for OffsetToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffsetToken")
            .field("offset", &self.allocation.offset)
            .field("size", &self.size)
            .finish()
    }
}

impl AllocBackend for OffsetBackend {
    type Token = OffsetToken;

    fn name(&self) -> &'static str {
        NAME
    }

    fn reserve(&mut self, size: u64, _stream: u64) -> Result<OffsetToken> {
        let unit_count = units(size).ok_or_else(|| {
            self.refuse(format!(
                "{size} bytes is more than u32::MAX units of {UNIT} bytes, \
                 the most one offset-allocator heap can hand out"
            ))
        })?;
        let allocation = self.allocator.allocate(unit_count).ok_or_else(|| {
            self.refuse(format!(
                "heap full: no free range of {size} bytes in the {} heap \
                 ({} bytes live in {} allocations)",
                gpumem::storage::units::format_bytes(self.capacity),
                self.live,
                self.live_count
            ))
        })?;
        let end = (u64::from(allocation.offset) + u64::from(unit_count)) * UNIT;
        self.extent = self.extent.max(end);
        self.live += size;
        self.live_count += 1;
        Ok(OffsetToken { allocation, size })
    }

    fn free(&mut self, token: OffsetToken) -> Result<()> {
        self.allocator.free(token.allocation);
        self.live -= token.size;
        self.live_count -= 1;
        Ok(())
    }

    fn live_bytes(&self) -> u64 {
        self.live
    }

    fn reserved_bytes(&self) -> u64 {
        self.extent
    }

    /// The extent never shrinks: its peak is where it stands.
    fn peak_reserved_bytes(&self) -> u64 {
        self.extent
    }

    /// The heap is one device allocation, made up front.
    fn storage_allocs(&self) -> u64 {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{Program, ReplayOptions, replay};
    use crate::workload::{Workload, WorkloadSpec};

    use gpumem::storage::units::GIB;

    fn program() -> Program {
        let spec = WorkloadSpec {
            seed: 3,
            scale: 0.02,
        };
        Program::compile(&Workload::Random.generate(&spec).unwrap()).unwrap()
    }

    #[test]
    fn the_extent_never_shrinks_and_covers_the_peak() {
        let program = program();
        let mut backend = OffsetBackend::new(80 * GIB, program.slots);
        let report = replay("t", &program, &mut backend, &ReplayOptions::default())
            .unwrap()
            .report;
        assert_eq!(report.failed_allocs, 0);
        assert!(report.peak_reserved_bytes >= report.peak_live_bytes);
        assert_eq!(report.final_reserved_bytes, report.peak_reserved_bytes);
        assert_eq!(backend.live_bytes(), 0, "the replay frees what is left");
    }

    #[test]
    fn a_request_past_u32_units_is_a_typed_error() {
        let mut backend = OffsetBackend::new(80 * GIB, 4);
        let err = backend.reserve(u64::MAX, 0).map(|_| ()).unwrap_err();
        assert!(err.to_string().contains("u32::MAX units"), "{err}");
        let err = backend.reserve(160 * GIB, 0).map(|_| ()).unwrap_err();
        assert!(err.to_string().contains("heap full"), "{err}");
    }

    #[test]
    fn a_full_heap_refuses_and_recovers_after_a_free() {
        let mut backend = OffsetBackend::new(GIB, 4);
        let first = backend.reserve(GIB, 0).unwrap();
        assert!(backend.reserve(UNIT, 0).is_err(), "the heap is full");
        backend.free(first).unwrap();
        assert!(backend.reserve(UNIT, 0).is_ok());
        assert_eq!(backend.peak_reserved_bytes(), GIB);
    }
}
