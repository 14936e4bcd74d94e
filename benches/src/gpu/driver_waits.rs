//! The fixed-cost calls of the driver cost table timed on a device: the
//! stream-ordered pair from a warm pool, a stream and a device wait with
//! nothing queued, an event record and an event query.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaContext, DriverError, result};
use mem_storage::DriverCall;

use crate::{BenchError, MIB, Result};

fn driver(what: &'static str) -> impl Fn(DriverError) -> BenchError {
    move |e| BenchError::Driver {
        what,
        message: e.to_string(),
    }
}

/// Mean ns of `f` over `reps` calls (timed together: each is microseconds).
fn mean(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let start = Instant::now();
    for _ in 0..reps {
        f()?;
    }
    Ok(start.elapsed().as_nanos() as f64 / reps.max(1) as f64)
}

/// `(call, mean ns)` for alloc async, free async, stream and device
/// synchronize, event record and event query.
pub fn measure(ctx: &Arc<CudaContext>, reps: usize) -> Result<Vec<(DriverCall, f64)>> {
    let stream = ctx.new_stream().map_err(driver("creating a stream"))?;
    let cu = stream.cu_stream();
    // Warm the stream's pool once so the pair below is served from it.
    // SAFETY: a 1 MiB allocation on a live stream of the bound context,
    // freed on the same stream.
    unsafe {
        let p = result::malloc_async(cu, MIB as usize).map_err(driver("cuMemAllocAsync"))?;
        result::free_async(p, cu).map_err(driver("cuMemFreeAsync"))?;
    }
    stream
        .synchronize()
        .map_err(driver("cuStreamSynchronize"))?;
    let mut ptrs = Vec::with_capacity(reps);
    let alloc = mean(reps, || {
        // SAFETY: as above; every pointer is freed below.
        let p =
            unsafe { result::malloc_async(cu, MIB as usize) }.map_err(driver("cuMemAllocAsync"))?;
        ptrs.push(p);
        Ok(())
    })?;
    let mut it = ptrs.into_iter();
    let free = mean(reps, || {
        if let Some(p) = it.next() {
            // SAFETY: allocated on this stream above, freed once.
            unsafe { result::free_async(p, cu) }.map_err(driver("cuMemFreeAsync"))?;
        }
        Ok(())
    })?;
    stream
        .synchronize()
        .map_err(driver("cuStreamSynchronize"))?;
    let stream_sync = mean(reps, || {
        stream.synchronize().map_err(driver("cuStreamSynchronize"))
    })?;
    let device_sync = mean(reps, || {
        ctx.synchronize().map_err(driver("cuCtxSynchronize"))
    })?;
    let event = ctx.new_event(None).map_err(driver("creating an event"))?;
    let record = mean(reps, || {
        event.record(&stream).map_err(driver("cuEventRecord"))
    })?;
    stream
        .synchronize()
        .map_err(driver("cuStreamSynchronize"))?;
    let query = mean(reps, || {
        event
            .try_is_complete()
            .map(drop)
            .map_err(driver("cuEventQuery"))
    })?;
    Ok(vec![
        (DriverCall::AllocAsync, alloc),
        (DriverCall::FreeAsync, free),
        (DriverCall::StreamSynchronize, stream_sync),
        (DriverCall::DeviceSynchronize, device_sync),
        (DriverCall::EventRecord, record),
        (DriverCall::EventQuery, query),
    ])
}
