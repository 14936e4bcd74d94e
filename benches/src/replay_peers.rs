//! `offset-allocator` and the system allocator as replay backends, so the
//! built-in workloads run through every peer with the same replay loop
//! (`gpumem_cli::replay::replay`, timed alone).
//!
//! What "reserved" means differs per peer and is stated here once:
//! - gpumem: bytes of pages held from the device (the engine's report);
//! - offset-allocator: a fixed heap that never shrinks, so its reserved
//!   bytes are the heap's high-water extent (the largest end offset handed
//!   out): what a device would have to hold for it;
//! - system: `malloc` on host memory, whose own overhead the replay cannot
//!   see; reserved equals live, as for a `cudaMalloc` per request.

use gpumem_cli::replay::AllocBackend;
use gpumem_cli::trace::Mode;
use gpumem_cli::{CliError, Result};
use offset_allocator::{Allocation, Allocator};

use crate::churn::system::Block;
use crate::churn::{UNIT, offset_allocator, system_alloc, units};
use crate::{BenchError, DEVICE_BYTES};

fn backend_error(backend: &'static str, err: BenchError) -> CliError {
    CliError::Backend {
        backend,
        message: err.to_string(),
    }
}

/// `offset-allocator` over an 80 GiB heap, as a replay backend.
pub struct OffsetBackend {
    allocator: Allocator<u32>,
    live: u64,
    live_count: usize,
    extent: u64,
    allocs: u64,
}

impl std::fmt::Debug for OffsetBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OffsetBackend")
            .field("live", &self.live)
            .field("extent", &self.extent)
            .finish()
    }
}

impl OffsetBackend {
    /// An empty heap with nodes for `max_live` allocations.
    pub fn new(max_live: usize) -> Self {
        OffsetBackend {
            allocator: offset_allocator(DEVICE_BYTES, max_live),
            live: 0,
            live_count: 0,
            extent: 0,
            allocs: 0,
        }
    }
}

/// A live `offset-allocator` reservation and its requested size.
#[derive(Clone, Copy)]
pub struct OffsetToken {
    allocation: Allocation<u32>,
    size: u64,
}

impl AllocBackend for OffsetBackend {
    type Token = OffsetToken;

    fn name(&self) -> &'static str {
        "offset-allocator"
    }

    fn reserve(&mut self, size: u64, _stream: u64) -> Result<OffsetToken> {
        let unit_count = units(size).map_err(|e| backend_error("offset-allocator", e))?;
        let allocation = self.allocator.allocate(unit_count).ok_or_else(|| {
            backend_error(
                "offset-allocator",
                BenchError::OffsetFull {
                    size,
                    live: self.live_count,
                },
            )
        })?;
        let end = (u64::from(allocation.offset) + u64::from(unit_count)) * UNIT;
        self.extent = self.extent.max(end);
        self.live += size;
        self.live_count += 1;
        self.allocs += 1;
        Ok(OffsetToken { allocation, size })
    }

    fn free(&mut self, token: OffsetToken) -> Result<()> {
        self.allocator.free(token.allocation);
        self.live -= token.size;
        self.live_count -= 1;
        Ok(())
    }

    fn mode(&mut self, _mode: Mode) {}

    fn cleanup(&mut self) {}

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

/// `malloc`/`free` on host memory, as a replay backend.
///
/// Workload sizes reach GiBs; `malloc` maps them lazily, so only the pages
/// it writes its own headers into are touched. A refused allocation is an
/// ordinary failed reservation, counted by the replay.
#[derive(Debug, Default)]
pub struct MallocBackend {
    live: u64,
    peak: u64,
    allocs: u64,
}

impl MallocBackend {
    /// No blocks yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl AllocBackend for MallocBackend {
    type Token = (Block, u64);

    fn name(&self) -> &'static str {
        "system"
    }

    fn reserve(&mut self, size: u64, _stream: u64) -> Result<(Block, u64)> {
        let block = system_alloc(size).map_err(|e| backend_error("system", e))?;
        self.live += size;
        self.peak = self.peak.max(self.live);
        self.allocs += 1;
        Ok((block, size))
    }

    fn free(&mut self, (block, size): (Block, u64)) -> Result<()> {
        drop(block);
        self.live -= size;
        Ok(())
    }

    fn mode(&mut self, _mode: Mode) {}

    fn cleanup(&mut self) {}

    fn live_bytes(&self) -> u64 {
        self.live
    }

    fn reserved_bytes(&self) -> u64 {
        self.live
    }

    fn peak_reserved_bytes(&self) -> u64 {
        self.peak
    }

    fn storage_allocs(&self) -> u64 {
        self.allocs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpumem_cli::replay::{ReplayOptions, replay};
    use gpumem_cli::workload::{Workload, WorkloadSpec};

    fn program() -> gpumem_cli::replay::Program {
        let spec = WorkloadSpec {
            seed: 3,
            scale: 0.02,
        };
        crate::fragmentation::program(Workload::Random, &spec).unwrap()
    }

    #[test]
    fn the_system_backend_holds_exactly_what_is_live() {
        let program = program();
        let mut backend = MallocBackend::new();
        let report = replay("t", &program, &mut backend, &ReplayOptions::default())
            .unwrap()
            .report;
        assert_eq!(report.failed_allocs, 0);
        assert_eq!(report.peak_reserved_bytes, report.peak_live_bytes);
        assert_eq!(backend.live_bytes(), 0, "the replay frees what is left");
    }

    #[test]
    fn the_offset_backends_extent_never_shrinks_and_covers_the_peak() {
        let program = program();
        let mut backend = OffsetBackend::new(program.slots);
        let report = replay("t", &program, &mut backend, &ReplayOptions::default())
            .unwrap()
            .report;
        assert_eq!(report.failed_allocs, 0);
        assert!(report.peak_reserved_bytes >= report.peak_live_bytes);
        assert_eq!(report.final_reserved_bytes, report.peak_reserved_bytes);
        assert_eq!(backend.live_bytes(), 0);
    }

    #[test]
    fn a_request_past_u32_units_is_a_typed_error() {
        let mut backend = OffsetBackend::new(4);
        let err = match backend.reserve(u64::MAX, 0) {
            Err(err) => err.to_string(),
            Ok(_) => panic!("u64::MAX bytes fitted an 80 GiB heap"),
        };
        assert!(err.contains("u32::MAX units"), "{err}");
        assert!(backend.reserve(crate::DEVICE_BYTES * 2, 0).is_err());
    }
}
