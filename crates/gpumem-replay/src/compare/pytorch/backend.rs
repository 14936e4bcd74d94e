//! The model as a replay backend: what `gpumem compare`'s `pytorch` and
//! `pytorch-expandable` rows replay through.

use gpumem::stats::WaitStats;
use gpumem::storage::DriverCosts;

use super::caching::CachingAllocator;
use super::policy::Policy;
use crate::error::{ReplayError, Result};
use crate::replay::AllocBackend;
use crate::report::DriverSummary;

/// The modeled caching allocator behind the replay loop.
#[derive(Debug)]
pub struct PytorchBackend {
    name: &'static str,
    model: CachingAllocator,
}

impl PytorchBackend {
    /// The model with `policy` on a device of `capacity` bytes, its driver
    /// calls charged at `costs`; `name` is the row's.
    pub fn new(name: &'static str, policy: Policy, capacity: u64, costs: DriverCosts) -> Self {
        PytorchBackend {
            name,
            model: CachingAllocator::new(policy, capacity, costs),
        }
    }

    /// The model, for its call counts.
    pub fn model(&self) -> &CachingAllocator {
        &self.model
    }

    /// Device calls, as the row counts them: `cudaMalloc` and `cudaFree`
    /// of segments, plus pages mapped and unmapped for expandable segments.
    pub fn storage_calls(&self) -> u64 {
        let c = self.model.calls();
        c.cuda_mallocs + c.cuda_frees + c.pages_mapped + c.pages_unmapped
    }
}

impl AllocBackend for PytorchBackend {
    type Token = u64;

    fn name(&self) -> &'static str {
        self.name
    }

    fn reserve(&mut self, size: u64, stream: u64) -> Result<u64> {
        self.model
            .malloc(size, stream)
            .map_err(|e| ReplayError::Backend {
                backend: self.name,
                message: e.to_string(),
            })
    }

    fn free(&mut self, token: u64) -> Result<()> {
        self.model.free(token).map_err(|e| ReplayError::Backend {
            backend: self.name,
            message: e.to_string(),
        })
    }

    /// `torch.cuda.empty_cache()`.
    fn cleanup(&mut self) {
        self.model.release_cached();
    }

    fn live_bytes(&self) -> u64 {
        self.model.live_bytes()
    }

    fn reserved_bytes(&self) -> u64 {
        self.model.reserved_bytes()
    }

    fn peak_reserved_bytes(&self) -> u64 {
        self.model.peak_reserved_bytes()
    }

    fn storage_allocs(&self) -> u64 {
        let c = self.model.calls();
        c.cuda_mallocs + c.pages_mapped
    }

    fn driver(&self, ops: u64, host_ns_per_op: f64) -> Option<DriverSummary> {
        Some(DriverSummary::new(
            &self.model.driver_time(),
            WaitStats::default(),
            ops,
            host_ns_per_op,
        ))
    }

    fn driver_so_far(&self) -> Option<(u64, u64)> {
        let driver = self.model.driver_time();
        Some((driver.total_ns(), driver.total_calls()))
    }
}
