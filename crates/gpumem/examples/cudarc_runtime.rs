//! A small runtime on cudarc that brings its own CUDA context and streams
//! and takes its memory from gpumem: compile a kernel with NVRTC at run
//! time, launch it on buffers gpumem hands out (pinned device pointers),
//! hand a buffer from one stream to another (`Stream::launch` records its
//! use), and capture the step into a CUDA graph that replays with no
//! allocation.
//!
//! `cargo run -p gpumem --example cudarc_runtime` — it needs a GPU (and
//! libnvrtc); without a driver it says why and exits 0.

use std::error::Error;

use gpumem::capture::cuda::CudaGraphBackend;
use gpumem::device::cudarc::driver::{
    CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg,
};
use gpumem::device::cudarc::nvrtc::compile_ptx;
use gpumem::prelude::*;

const KERNEL: &str = r#"
extern "C" __global__ void axpb(const float* x, float* y, float a, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { y[i] = a * x[i] + b; }
}
"#;

const N: usize = 1 << 20;

/// `y = a·x + b` over `N` floats, launched on `cuda`.
fn axpb(
    cuda: &CudaStream,
    f: &CudaFunction,
    x: &gpumem::stream::DevicePtrGuard,
    y: &gpumem::stream::DevicePtrGuard,
    (a, b): (f32, f32),
) -> Result<(), Box<dyn Error>> {
    let (px, py, n) = (x.as_raw(), y.as_raw(), N as i32);
    let mut launch = cuda.launch_builder(f);
    launch.arg(&px).arg(&py).arg(&a).arg(&b).arg(&n);
    // SAFETY: the kernel reads N floats at `px` and writes N at `py`; both
    // are live gpumem allocations of N * 4 bytes, pinned by their guards
    // until this step's work is complete (the caller synchronizes or holds
    // the guards), and the argument types match the kernel's signature.
    unsafe { launch.launch(LaunchConfig::for_num_elems(N as u32)) }?;
    Ok(())
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Runs the example; an error is printed with its message (`Display`),
/// not its `Debug` form, and the process exits with status 1.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    if !gpumem::storage::cuda_available() {
        println!("skipping: the CUDA driver library (libcuda) cannot be loaded");
        return Ok(());
    }
    let ctx = match CudaContext::new(0) {
        Ok(ctx) => ctx,
        Err(err) => {
            println!("skipping: no CUDA device ({err})");
            return Ok(());
        }
    };
    let ptx = match compile_ptx(KERNEL) {
        Ok(ptx) => ptx,
        Err(err) => {
            println!("skipping: NVRTC could not compile the kernel ({err})");
            return Ok(());
        }
    };
    let f = ctx.load_module(ptx)?.load_function("axpb")?;

    // The runtime's own streams become the device's streams 0 and 1.
    let (load, compute) = (ctx.new_stream()?, ctx.new_stream()?);
    let device = Device::cuda_from_context(ctx.clone())?
        .cuda_streams(vec![load.clone(), compute.clone()])
        .build()?;
    let (s_load, s_compute) = (device.stream(0)?, device.stream(1)?);
    println!("{}", device.memory_report());

    // Stream 0 loads the input; stream 1 computes on it.
    let x = s_load.reserve((N * 4) as u64)?;
    let input: Vec<u8> = (0..N).flat_map(|i| (i as f32).to_le_bytes()).collect();
    s_load.write(&x, &input)?;
    s_load.synchronize()?;
    let y = s_compute.reserve((N * 4) as u64)?;
    {
        // The launch records x's use (x is not reused before stream 1's
        // work ends) and keeps every move out until the kernel is counted.
        let launch = s_compute.launch(&[&x, &y])?;
        let (px, py) = (launch.device_ptr(&x)?, launch.device_ptr(&y)?);
        axpb(&compute, &f, &px, &py, (2.0, 1.0))?;
        launch.submit();
    }
    drop(x); // held by stream 0 until stream 1 completes
    s_compute.synchronize()?;
    let mut out = vec![0u8; N * 4];
    s_compute.read(&y, &mut out)?;
    let out = floats(&out);
    assert!((0..N).step_by(4099).all(|i| out[i] == 2.0 * i as f32 + 1.0));
    println!("axpb on stream 1 over stream 0's buffer: ok");

    // Capture one step into a graph: warm up (the pool reaches the step's
    // working set), record on the capturing stream, replay.
    // SAFETY: every slice made during the window is gpumem memory used
    // only on the capturing stream (`compute`).
    let backend = unsafe { CudaGraphBackend::new(compute.clone()) };
    let warmup = s_compute.begin_capture_with(backend)?;
    drop(warmup.stream().reserve((N * 4) as u64)?);
    let mut recording = warmup.start_recording()?;
    let out_buf = recording.stream().reserve((N * 4) as u64)?;
    let allocations = device.stats().storage_allocs + device.stats().chunks.creates;
    {
        let (py, pz) = (s_compute.device_ptr(&y)?, s_compute.device_ptr(&out_buf)?);
        let stream = recording.recorder().clone();
        axpb(&stream, &f, &py, &pz, (0.5, -0.5))?;
    }
    recording.uses(&y)?;
    let mut graph = recording.end()?;
    for _ in 0..10 {
        graph.replay()?;
    }
    s_compute.synchronize()?;
    assert_eq!(
        device.stats().storage_allocs + device.stats().chunks.creates,
        allocations,
        "no allocation while recording or replaying"
    );
    let mut z = vec![0u8; N * 4];
    s_compute.read(&out_buf, &mut z)?;
    let z = floats(&z);
    assert!((0..N).step_by(4099).all(|i| z[i] == i as f32));
    println!("graph: captured once, replayed 10 times, no allocation");
    drop(graph);
    Ok(())
}
