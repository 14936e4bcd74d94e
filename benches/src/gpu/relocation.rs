//! Relocation copy bandwidth against a plain device-to-device copy.
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
//! kept its bytes.

use std::sync::Arc;
use std::time::Instant;

use mem_pools::{
    CopyQueue, ManagedMemoryHandle, MemoryConfiguration, MemoryManagement, MemoryManagementOptions,
    MemoryPoolOptions, PoolType, ServerLogger,
};
use mem_relocate::{Planned, RelocationReason};
use mem_storage::{DevicePtr, DeviceResource, ResourceStorage, StreamId};

use crate::quick::human;
use crate::table::{Table, divide, ratio};
use crate::{BenchError, MIB, Result};

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
    let mut properties = gpumem_cli::replay::device_properties(capacity, resource.alignment());
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

/// Copies `bytes` from `src` to `dst` on `stream` as `pieces` equal
/// copies (the last one takes the remainder) and waits for them.
pub fn copy_pieces<R: DeviceResource>(
    resource: &R,
    (src, dst): (DevicePtr, DevicePtr),
    bytes: u64,
    pieces: u64,
    stream: StreamId,
) -> Result<()> {
    let pieces = pieces.clamp(1, bytes.max(1));
    let piece = bytes / pieces;
    let at = |ptr: DevicePtr, offset: u64| {
        ptr.checked_add(offset).ok_or(BenchError::Check(format!(
            "address {ptr:?} + {offset} overflows"
        )))
    };
    for i in 0..pieces {
        let offset = i * piece;
        let len = if i + 1 == pieces {
            bytes - offset
        } else {
            piece
        };
        resource.copy(at(src, offset)?, at(dst, offset)?, len, stream)?;
    }
    resource.synchronize(stream)?;
    Ok(())
}

/// Nanoseconds to copy `bytes` between two plain allocations on `stream`
/// as `pieces` copies (one warm-up run first, untimed).
pub fn plain_copy<R: DeviceResource>(
    resource: &R,
    bytes: u64,
    pieces: u64,
    stream: StreamId,
) -> Result<u64> {
    let src = resource.allocate(bytes, stream)?;
    let dst = resource.allocate(bytes, stream)?;
    let run = || -> Result<u64> {
        let start = Instant::now();
        copy_pieces(resource, (src, dst), bytes, pieces, stream)?;
        Ok(start.elapsed().as_nanos() as u64)
    };
    let timed = run().and_then(|_| run());
    resource.deallocate(src, bytes, stream)?;
    resource.deallocate(dst, bytes, stream)?;
    timed
}

/// GB/s for `bytes` in `ns`.
pub fn gbps(bytes: u64, ns: u64) -> Option<f64> {
    (ns > 0).then(|| bytes as f64 / ns as f64)
}

/// On device 0: the scenario with 64 MiB slices (1 GiB, or 256 MiB when
/// `quick`), then the plain copies of the same bytes.
pub fn cuda_table(quick: bool) -> Result<String> {
    use mem_relocate::CudaCopyQueue;
    let cuda = super::device(mem_storage::CudaAllocMode::StreamOrdered)?;
    let scenario = Scenario {
        page: 256 * MIB,
        slice: 64 * MIB,
        slices: if quick { 4 } else { 16 },
    };
    let mut memory = manager(cuda.clone(), &scenario);
    let mut queue = CudaCopyQueue::new(cuda.clone())?;
    let moved = relocate_outdated(&mut memory, &mut queue, &scenario)?;
    let stream = cuda.create_stream()?;
    let one = plain_copy(&*cuda, moved.bytes, 1, stream)?;
    let sliced = plain_copy(&*cuda, moved.bytes, moved.moves as u64, stream)?;
    let mut t = Table::new(&["copy", "bytes", "copies", "ms", "GB/s", "÷ relocation"]);
    let relocation = gbps(moved.bytes, moved.copy_ns);
    for (name, copies, ns) in [
        (
            "relocation (CudaCopyQueue)",
            moved.moves as u64,
            moved.copy_ns,
        ),
        ("plain cuMemcpyDtoDAsync, one copy", 1, one),
        (
            "plain cuMemcpyDtoDAsync, slice-sized copies",
            moved.moves as u64,
            sliced,
        ),
    ] {
        let rate = gbps(moved.bytes, ns);
        t.row(vec![
            name.into(),
            human(moved.bytes),
            copies.to_string(),
            format!("{:.3}", ns as f64 / 1e6),
            rate.map(|r| format!("{r:.1}")).unwrap_or_default(),
            ratio(divide(rate, relocation)),
        ]);
    }
    Ok(t.render())
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
        let mut memory = manager(HostResource::with_capacity(64 * MIB), &scenario);
        let moved = relocate_outdated(&mut memory, &mut StorageCopyQueue, &scenario).unwrap();
        assert_eq!(moved.moves, 8);
        assert_eq!(moved.bytes, 8 * 64 * 1024);
        assert!(
            !memory.has_outdated(),
            "the commit gave the outdated pages back"
        );
    }

    #[test]
    fn a_copy_in_uneven_pieces_copies_every_byte_on_host_memory() {
        let host = HostResource::with_capacity(MIB);
        let s = StreamId::DEFAULT;
        let bytes = 10_007;
        let (src, dst) = (
            host.allocate(bytes, s).unwrap(),
            host.allocate(bytes, s).unwrap(),
        );
        let data: Vec<u8> = (0..bytes).map(|i| (i * 7 % 251) as u8).collect();
        host.write(src, &data, s).unwrap();
        copy_pieces(&host, (src, dst), bytes, 16, s).unwrap();
        let mut out = vec![0u8; bytes as usize];
        host.read(dst, &mut out, s).unwrap();
        assert_eq!(out, data);
        assert!(plain_copy(&host, 64 * 1024, 16, s).unwrap() > 0);
        assert!(gbps(1, 0).is_none());
    }
}
