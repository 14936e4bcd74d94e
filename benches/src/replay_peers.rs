//! `offset-allocator` and the system allocator as replay backends, so the
//! built-in workloads run through every peer with the same replay loop
//! (`gpumem_replay::replay::replay`, timed alone).
//!
//! What "reserved" means differs per peer and is stated here once:
//! - gpumem: physical memory mapped (arenas) or bytes of pages held, from
//!   `Device::stats`;
//! - offset-allocator: a fixed heap that never shrinks, so its reserved
//!   bytes are the heap's high-water extent (the largest end offset handed
//!   out): what a device would have to hold for it. Its backend is the
//!   `gpumem` command's own ([`OffsetBackend`], re-exported here), so
//!   `gpumem compare` and these tables measure one peer;
//! - system: `malloc` on host memory, whose own overhead the replay cannot
//!   see; reserved equals live, as for a `cudaMalloc` per request.

use gpumem_replay::replay::{AllocBackend, SystemBackend};
use gpumem_replay::{ReplayError, Result};

pub use gpumem_replay::compare::{OffsetBackend, OffsetToken};

use crate::BenchError;
use crate::churn::system::Block;
use crate::churn::system_alloc;

fn backend_error(backend: &'static str, err: BenchError) -> ReplayError {
    ReplayError::Backend {
        backend,
        message: err.to_string(),
    }
}

/// `malloc`/`free` on host memory, as a replay backend: the `gpumem`
/// command's `system` peer ([`SystemBackend`], which keeps the counts) with
/// a real block behind each reservation, so its host time is measured.
///
/// Workload sizes reach GiBs; `malloc` maps them lazily, so only the pages
/// it writes its own headers into are touched. A refused allocation is an
/// ordinary failed reservation, counted by the replay.
#[derive(Debug)]
pub struct MallocBackend {
    counts: SystemBackend,
}

impl MallocBackend {
    /// No blocks yet.
    pub fn new() -> Self {
        MallocBackend {
            counts: SystemBackend::new(u64::MAX),
        }
    }
}

impl Default for MallocBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl AllocBackend for MallocBackend {
    type Token = (Block, u64);

    fn name(&self) -> &'static str {
        self.counts.name()
    }

    fn reserve(&mut self, size: u64, stream: u64) -> Result<(Block, u64)> {
        let block = system_alloc(size).map_err(|e| backend_error("system", e))?;
        Ok((block, self.counts.reserve(size, stream)?))
    }

    fn free(&mut self, (block, size): (Block, u64)) -> Result<()> {
        drop(block);
        self.counts.free(size)
    }

    fn live_bytes(&self) -> u64 {
        self.counts.live_bytes()
    }

    fn reserved_bytes(&self) -> u64 {
        self.counts.reserved_bytes()
    }

    fn peak_reserved_bytes(&self) -> u64 {
        self.counts.peak_reserved_bytes()
    }

    fn storage_allocs(&self) -> u64 {
        self.counts.storage_allocs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpumem_replay::replay::{ReplayOptions, replay};
    use gpumem_replay::workload::{Workload, WorkloadSpec};

    fn program() -> gpumem_replay::replay::Program {
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
}
