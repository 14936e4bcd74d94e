//! gpumem's pool engine as a churn peer: `MemoryManagement` with the
//! default layout (`SubSlices`) on a simulated 80 GiB device.
//!
//! The simulated device holds no memory, which costs the engine nothing on
//! a pool hit (a hit never touches the storage) and lets a million live
//! slices fit anywhere. Page allocations during setup go through the same
//! engine path a CUDA device would take.

use std::sync::Arc;

use mem_pools::{
    ManagedMemoryHandle, MemoryConfiguration, MemoryManagement, MemoryManagementOptions,
    ServerLogger,
};
use mem_storage::{ComputeStorage, SimulatedStorage};

use super::ChurnPeer;
use crate::{BenchError, DEVICE_BYTES, Result};

/// The pool engine over a simulated device, with one handle per slot.
#[derive(Debug)]
pub struct PoolsPeer {
    manager: MemoryManagement<SimulatedStorage>,
    slots: Vec<Option<ManagedMemoryHandle>>,
    live: usize,
}

/// A pool engine with `config` on a simulated device of `bytes` bytes
/// (the engine alone, for the per-op micro-benchmarks; trace replays go
/// through `gpumem::Device`).
pub fn simulated_manager(
    bytes: u64,
    config: MemoryConfiguration,
) -> MemoryManagement<SimulatedStorage> {
    let storage = SimulatedStorage::simulated(bytes);
    let properties = crate::churn::engine_properties(bytes, storage.alignment());
    MemoryManagement::from_configuration(
        storage,
        &properties,
        config,
        Arc::new(ServerLogger::named("gpumem-benches")),
        MemoryManagementOptions::named("bench"),
    )
}

impl PoolsPeer {
    /// An empty engine with room for `slots` slots.
    pub fn new(slots: usize) -> Self {
        PoolsPeer {
            manager: simulated_manager(DEVICE_BYTES, MemoryConfiguration::SubSlices),
            slots: Vec::with_capacity(slots),
            live: 0,
        }
    }

    fn reserve(&mut self, size: u64) -> Result<ManagedMemoryHandle> {
        self.manager
            .reserve(size)
            .map_err(|source| BenchError::Pool {
                size,
                live: self.live,
                source,
            })
    }

    /// Bytes the engine holds from the device.
    pub fn reserved_bytes(&self) -> u64 {
        self.manager.memory_usage().bytes_reserved
    }
}

impl ChurnPeer for PoolsPeer {
    fn name(&self) -> &'static str {
        "gpumem"
    }

    fn fill(&mut self, sizes: &[u64]) -> Result<()> {
        for &size in sizes {
            let handle = self.reserve(size)?;
            self.slots.push(Some(handle));
            self.live += 1;
        }
        Ok(())
    }

    fn replace(&mut self, slot: usize, size: u64) -> Result<()> {
        // Dropping the handle queues its slice; the next reserve drains the
        // queue, so the free's cost is inside this step as it would be in a
        // runtime.
        if self.slots.get_mut(slot).and_then(Option::take).is_some() {
            self.live -= 1;
        }
        let handle = self.reserve(size)?;
        if let Some(entry) = self.slots.get_mut(slot) {
            *entry = Some(handle);
            self.live += 1;
        }
        Ok(())
    }

    fn pair(&mut self, size: u64) -> Result<()> {
        let handle = self.reserve(size)?;
        drop(std::hint::black_box(handle));
        Ok(())
    }

    fn live(&self) -> usize {
        self.live
    }
}
