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

use gpumem_replay::replay::AllocBackend;
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
