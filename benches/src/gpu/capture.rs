//! Capture replay with zero device allocations, on a real CUDA graph.
//!
//! The CubeCL-compatible capture protocol on the pool engine, with the graph recorded
//! by the driver:
//! 1. `input` is reserved and filled before the window (a pre-existing
//!    buffer the graph reads);
//! 2. `capture_begin`; a warmup pass reserves the two intermediate buffers
//!    and runs the copies eagerly (pages are allocated here, outside any
//!    stream capture); `capture_priming_end` frees them in the pool;
//! 3. the stream begins capturing; the recorded pass reserves the same
//!    buffers again (pool hits: no device allocation may happen inside a
//!    stream capture) and enqueues `input → mid → output`; the capture ends
//!    into an instantiated graph; `capture_end` hands back the touched
//!    slices, which this code keeps alive as long as the graph;
//! 4. the output is cleared, the graph is replayed many times, and the
//!    device allocation count (a `StatsResource` under the pools) must not
//!    move across the recorded pass or the replays; the output must hold
//!    the input's bytes.
//!
//! This is measured with mem-pools and cudarc directly (not mem-capture's
//! state machine), so it shows the engine's side of the promise.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::sys;
use mem_pools::{MemoryConfiguration, MemoryManagement, MemoryManagementOptions, ServerLogger};
use mem_storage::{
    ComputeStorage, CudaAllocMode, CudaResource, DeviceResource, ResourceStorage, StatsResource,
};

use super::Scale;
use crate::table::Table;
use crate::{BenchError, MIB, Result};

type Storage = ResourceStorage<Arc<StatsResource<Arc<CudaResource>>>>;

fn driver(what: &'static str) -> impl FnOnce(cudarc::driver::DriverError) -> BenchError {
    move |e| BenchError::Driver {
        what,
        message: format!("{e:?}"),
    }
}

fn reserve(
    memory: &mut MemoryManagement<Storage>,
    size: u64,
) -> Result<mem_pools::ManagedMemoryHandle> {
    memory.reserve(size).map_err(|source| BenchError::Pool {
        size,
        live: 0,
        source,
    })
}

/// `src → dst` through the pool engine's storage on its stream.
fn copy(
    memory: &mut MemoryManagement<Storage>,
    src: &mem_pools::ManagedMemoryHandle,
    dst: &mem_pools::ManagedMemoryHandle,
) -> Result<()> {
    let from = memory.get_storage(src.binding())?;
    let to = memory.get_storage(dst.binding())?;
    memory.storage().copy(&from, &to)?;
    Ok(())
}

/// Records and replays the graph; returns the Markdown report.
pub fn cuda_report(scale: Scale) -> Result<String> {
    let bytes = match scale {
        Scale::Full => 256 * MIB,
        Scale::Quick => 16 * MIB,
        Scale::Smoke => MIB,
    };
    let replays = scale.count(200);
    let cuda = super::device(CudaAllocMode::StreamOrdered)?;
    let stats = Arc::new(StatsResource::new(cuda.clone()));
    let stream_id = cuda.create_stream()?;
    let stream = cuda.cuda_stream(stream_id)?;
    let total = cuda.mem_info()?.total;
    let properties = crate::churn::engine_properties(total, cuda.alignment());
    let mut memory = MemoryManagement::from_configuration(
        ResourceStorage::on_stream(stats.clone(), stream_id),
        &properties,
        MemoryConfiguration::SubSlices,
        Arc::new(ServerLogger::named("gpu-bench")),
        MemoryManagementOptions::named("capture"),
    );

    let input = reserve(&mut memory, bytes)?;
    let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    memory.write(input.binding(), &data)?;

    memory.capture_begin();
    {
        let mid = reserve(&mut memory, bytes)?;
        let output = reserve(&mut memory, bytes)?;
        copy(&mut memory, &input, &mid)?;
        copy(&mut memory, &mid, &output)?;
        memory.storage().synchronize()?;
    }
    memory.capture_priming_end();

    let before_recording = stats.allocation_count();
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .map_err(driver("cuStreamBeginCapture"))?;
    let recorded = (|| -> Result<_> {
        let mid = reserve(&mut memory, bytes)?;
        let output = reserve(&mut memory, bytes)?;
        copy(&mut memory, &input, &mid)?;
        copy(&mut memory, &mid, &output)?;
        Ok((mid, output))
    })();
    // End the capture whatever happened, so the stream is never left capturing.
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .map_err(driver("cuStreamEndCapture"))?;
    let (mid, output) = recorded?;
    let graph = graph.ok_or_else(|| BenchError::Check("the capture recorded no graph".into()))?;
    let pinned = memory.capture_end();
    let recording_allocs = stats.allocation_count() - before_recording;

    let output_view = memory.get_storage(output.binding())?;
    memory.storage().fill(&output_view, 0)?;
    memory.storage().synchronize()?;
    graph.upload().map_err(driver("cuGraphUpload"))?;
    let before_replays = stats.allocation_count();
    let start = Instant::now();
    for _ in 0..replays {
        graph.launch().map_err(driver("cuGraphLaunch"))?;
    }
    stream
        .synchronize()
        .map_err(driver("cuStreamSynchronize"))?;
    let replay_ns = start.elapsed().as_nanos() as f64 / replays as f64;
    let replay_allocs = stats.allocation_count() - before_replays;

    let mut out = vec![0u8; bytes as usize];
    memory.read(output.binding(), &mut out)?;
    let bytes_ok = out == data;
    drop(graph);
    drop((mid, output, pinned));

    let mut t = Table::new(&["check", "value"]);
    t.row(vec![
        "graph: two device-to-device copies of".into(),
        crate::table::human(bytes),
    ]);
    t.row(vec![
        "device allocations while recording".into(),
        recording_allocs.to_string(),
    ]);
    t.row(vec![
        format!("device allocations over {replays} replays"),
        replay_allocs.to_string(),
    ]);
    t.row(vec![
        "time per replay (µs)".into(),
        format!("{:.1}", replay_ns / 1e3),
    ]);
    t.row(vec![
        "output holds the input's bytes".into(),
        if bytes_ok { "yes" } else { "NO" }.into(),
    ]);
    if recording_allocs != 0 || replay_allocs != 0 || !bytes_ok {
        return Err(BenchError::Check(format!(
            "capture replay: {recording_allocs} allocations while recording, \
             {replay_allocs} over the replays, bytes {}\n{}",
            if bytes_ok { "right" } else { "WRONG" },
            t.render()
        )));
    }
    Ok(t.render())
}
