//! Pool hit vs the driver's allocators, same sizes, same stream.
//!
//! - **pool hit**: `MemoryManagement` over the device (pages from
//!   `cuMemAllocAsync`), warmed once so the page exists; each pair is a
//!   reserve and a drop, no driver call.
//! - **cuMemAllocAsync / cuMemFreeAsync**: mem-storage's stream-ordered
//!   resource, from the device's default memory pool (which caches too,
//!   in the driver); the stream is synchronized once at the end and that
//!   wait is inside the time.
//! - **cuMemAlloc / cuMemFree**: the synchronous pair (a free waits for the
//!   device).

use std::sync::Arc;
use std::time::Instant;

use mem_pools::{MemoryConfiguration, MemoryManagement, MemoryManagementOptions, ServerLogger};
use mem_storage::{CudaAllocMode, CudaResource, DeviceResource, ResourceStorage, StreamId};

use super::Scale;
use crate::table::human;
use crate::table::{Table, divide, ns, ratio};
use crate::{BenchError, GIB, KIB, MIB, Result};

/// Sizes measured.
pub const SIZES: [u64; 5] = [4 * KIB, MIB, 16 * MIB, 256 * MIB, GIB];

/// One size's results, ns per reserve+drop pair.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AllocRow {
    /// Bytes per request.
    pub size: u64,
    /// Pool hit.
    pub pool_hit: f64,
    /// cuMemAllocAsync + cuMemFreeAsync.
    pub driver_async: f64,
    /// cuMemAlloc + cuMemFree.
    pub driver_sync: f64,
}

fn iterations(size: u64, scale: Scale) -> u64 {
    scale.count(if size >= 256 * MIB { 200 } else { 2_000 })
}

fn pool_hit(cuda: &Arc<CudaResource>, size: u64, iters: u64) -> Result<f64> {
    let storage = ResourceStorage::new(cuda.clone());
    let total = cuda.mem_info()?.total;
    let properties = crate::churn::engine_properties(total, cuda.alignment());
    let mut manager = MemoryManagement::from_configuration(
        storage,
        &properties,
        MemoryConfiguration::SubSlices,
        Arc::new(ServerLogger::named("gpu-bench")),
        MemoryManagementOptions::named("gpu-bench"),
    );
    let pool = |e| BenchError::Pool {
        size,
        live: 0,
        source: e,
    };
    drop(manager.reserve(size).map_err(pool)?);
    let before = manager.stats().storage_allocs;
    let start = Instant::now();
    for _ in 0..iters {
        drop(std::hint::black_box(manager.reserve(size).map_err(pool)?));
    }
    let elapsed = start.elapsed().as_nanos() as f64;
    let allocs = manager.stats().storage_allocs - before;
    if allocs != 0 {
        return Err(BenchError::Check(format!(
            "a warm pool made {allocs} device allocations for {} pairs of {size} bytes",
            iters
        )));
    }
    Ok(elapsed / iters as f64)
}

fn driver_pairs(cuda: &CudaResource, size: u64, iters: u64) -> Result<f64> {
    let stream = StreamId::DEFAULT;
    let warm = cuda.allocate(size, stream)?;
    cuda.deallocate(warm, size, stream)?;
    cuda.synchronize(stream)?;
    let start = Instant::now();
    for _ in 0..iters {
        let ptr = cuda.allocate(size, stream)?;
        cuda.deallocate(std::hint::black_box(ptr), size, stream)?;
    }
    cuda.synchronize(stream)?;
    Ok(start.elapsed().as_nanos() as f64 / iters as f64)
}

/// Measures every size of [`SIZES`] up to the scale's largest (fewer
/// iterations below [`Scale::Full`]).
pub fn measure(scale: Scale) -> Result<Vec<AllocRow>> {
    let stream_ordered = super::device(CudaAllocMode::StreamOrdered)?;
    let sync = super::device(CudaAllocMode::Sync)?;
    SIZES
        .iter()
        .filter(|&&size| size <= scale.max_bytes())
        .map(|&size| {
            let iters = iterations(size, scale);
            Ok(AllocRow {
                size,
                pool_hit: pool_hit(&stream_ordered, size, iters)?,
                driver_async: driver_pairs(&stream_ordered, size, iters)?,
                driver_sync: driver_pairs(&sync, size, iters)?,
            })
        })
        .collect()
}

/// The rows as Markdown, with the driver ÷ pool ratios.
pub fn table(rows: &[AllocRow]) -> String {
    let mut t = Table::new(&[
        "size",
        "pool hit ns",
        "cuMemAllocAsync+Free ns",
        "cuMemAlloc+Free ns",
        "async ÷ pool",
        "sync ÷ pool",
    ]);
    for r in rows {
        t.row(vec![
            human(r.size),
            ns(r.pool_hit),
            ns(r.driver_async),
            ns(r.driver_sync),
            ratio(divide(Some(r.driver_async), Some(r.pool_hit))),
            ratio(divide(Some(r.driver_sync), Some(r.pool_hit))),
        ]);
    }
    t.render()
}
