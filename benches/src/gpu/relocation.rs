//! The relocation scenario behind the copy-bandwidth measurement.
//!
//! The scenario: one growable sliced pool starting at `page` bytes is
//! filled with `slices` slices of `slice` bytes; one allocation of twice
//! the page size then makes the pool double its page size, so every filled
//! page is outdated. A relocation for a capture (which may allocate
//! current-size target pages) plans targets (untimed), copies (timed: the
//! wait for the device's streams, every slice copy, the wait for the
//! copies) and commits (untimed). The peer copies the same bytes between two
//! plain allocations on a stream: once as one copy, once as the same number
//! of slice-sized copies.
//!
//! The scenario is generic over the resource and copy queue; the tests run
//! it on host memory with `StorageCopyQueue` and check that every slice
//! kept its bytes. The CUDA table and the plain copies are in
//! [`super::bandwidth`].

use std::sync::Arc;
use std::time::Instant;

use mem_pools::{
    CopyQueue, ManagedMemoryHandle, MemoryConfiguration, MemoryManagement, MemoryManagementOptions,
    MemoryPoolOptions, PoolType, ServerLogger,
};
use mem_relocate::{Planned, RelocationReason};
use mem_storage::{DeviceResource, ResourceStorage};

use crate::{BenchError, Result};

/// Shape of the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    /// Initial page size of the pool.
    pub page: u64,
    /// Size of each live slice.
    pub slice: u64,
    /// Live slices on the pages that become outdated.
    pub slices: usize,
}

/// What one relocation moved and how long its copy step took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelocationCopy {
    /// Slices moved.
    pub moves: usize,
    /// Bytes moved.
    pub bytes: u64,
    /// Nanoseconds of the copy step (device wait, copies, copy wait).
    pub copy_ns: u64,
}

const PATTERN: usize = 4096;

fn pattern(index: usize) -> Vec<u8> {
    (0..PATTERN)
        .map(|i| (i as u8) ^ (index as u8).wrapping_mul(31))
        .collect()
}

/// The engine over `resource` with one growable sliced pool.
pub fn manager<R: DeviceResource>(
    resource: R,
    scenario: &Scenario,
) -> MemoryManagement<ResourceStorage<R>> {
    let capacity = resource.mem_info().map(|m| m.total).unwrap_or(u64::MAX);
    let mut properties = crate::churn::engine_properties(capacity, resource.alignment());
    properties.max_page_size = properties.max_page_size.max(scenario.page * 4);
    let config = MemoryConfiguration::Custom {
        pool_options: vec![MemoryPoolOptions {
            pool_type: PoolType::SlicedPages {
                page_size: scenario.page,
                max_slice_size: scenario.page * 4,
            },
            dealloc_period: None,
        }],
    };
    MemoryManagement::from_configuration(
        ResourceStorage::new(resource),
        &properties,
        config,
        Arc::new(ServerLogger::named("gpu-bench")),
        MemoryManagementOptions::named("relocation-bandwidth"),
    )
}

/// Runs the scenario on `memory` with `queue` and checks every moved slice
/// still holds its bytes.
pub fn relocate_outdated<R: DeviceResource>(
    memory: &mut MemoryManagement<ResourceStorage<R>>,
    queue: &mut dyn CopyQueue<ResourceStorage<R>>,
    scenario: &Scenario,
) -> Result<RelocationCopy> {
    let reserve = |m: &mut MemoryManagement<_>, size| {
        m.reserve(size).map_err(|source| BenchError::Pool {
            size,
            live: 0,
            source,
        })
    };
    let mut live: Vec<ManagedMemoryHandle> = Vec::with_capacity(scenario.slices);
    for index in 0..scenario.slices {
        let handle = reserve(memory, scenario.slice)?;
        memory.write(handle.binding(), &pattern(index))?;
        live.push(handle);
    }
    let grower = reserve(memory, scenario.page * 2)?;
    if !memory.has_outdated() {
        return Err(BenchError::Check(
            "growing the pool left no outdated page: the scenario does not exercise relocation"
                .into(),
        ));
    }
    let planned = Planned::new(memory, RelocationReason::Capture);
    let (moves, bytes) = (planned.moves(), planned.bytes());
    let start = Instant::now();
    let copied = planned.copy(queue)?;
    let copy_ns = start.elapsed().as_nanos() as u64;
    copied.commit()?;
    let mut out = vec![0u8; PATTERN];
    for (index, handle) in live.iter().enumerate() {
        memory.read(handle.binding(), &mut out)?;
        if out != pattern(index) {
            return Err(BenchError::Check(format!(
                "slice {index} lost its bytes in the relocation"
            )));
        }
    }
    drop(grower);
    Ok(RelocationCopy {
        moves,
        bytes,
        copy_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mem_pools::StorageCopyQueue;
    use mem_storage::HostResource;

    #[test]
    fn the_scenario_moves_every_slice_with_its_bytes_on_host_memory() {
        let scenario = Scenario {
            page: 256 * 1024,
            slice: 64 * 1024,
            slices: 8,
        };
        let mut memory = manager(HostResource::with_capacity(64 * crate::MIB), &scenario);
        let moved = relocate_outdated(&mut memory, &mut StorageCopyQueue, &scenario).unwrap();
        assert_eq!(moved.moves, 8);
        assert_eq!(moved.bytes, 8 * 64 * 1024);
        assert!(
            !memory.has_outdated(),
            "the commit gave the outdated pages back"
        );
    }
}
