//! Memory scenarios users have reported against CubeCL's and Burn's wgpu
//! runtime, each a few lines of Burn. A scenario prints `point LABEL
//! IN_USE RESERVED RSS` lines: what Burn's `Device::memory_pool_usage`
//! says the allocator holds (bytes in live allocations, bytes reserved on
//! the device) and the process's resident set, after a device sync.
//! Reserved counts every pool of the device (the main memory and the
//! staging and uniform memories, which stay on CubeCL's engine); the task
//! adds the main memory's own wgpu buffers from the counts the patched
//! cubecl-wgpu writes at exit.

use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::{Device, Tensor, TensorData};

use crate::data::Rng;

/// The scenarios, by name.
pub const NAMES: [&str; 4] = ["big-tensor", "cleanup-loop", "drop", "inference-loop"];

/// Runs the scenario `name`; false when there is none of that name.
pub fn run(name: &str, device: &Device) -> bool {
    match name {
        "big-tensor" => big_tensor(device),
        "cleanup-loop" => cleanup_loop(device),
        "drop" => drop_tensor(device),
        "inference-loop" => inference_loop(device),
        _ => return false,
    }
    true
}

/// Prints what the device holds now, labelled `label` (no spaces).
fn point(device: &Device, label: &str) {
    device.sync().expect("the device syncs");
    let usage = device.memory_pool_usage().expect("wgpu reports its pools");
    println!(
        "point {label} {} {} {}",
        usage.bytes_in_use,
        usage.bytes_reserved,
        rss()
    );
}

/// The process's resident set in bytes (`VmRSS`), 0 where unknown.
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib << 10)
        })
        .unwrap_or(0)
}

/// One large tensor, alone, then dropped and cleaned up: GPT-2's logits
/// for 6 sequences of 64 tokens (6 × 64 × 50,257 f32, 73.6 MiB). The
/// reported case had 512 tokens (588.9 MiB), but lavapipe refuses a buffer
/// of even 147 MiB. Ones, not zeros: a zeros tensor nothing reads is never
/// given memory here, so the first element is read back too.
fn big_tensor(device: &Device) {
    point(device, "start");
    let logits = Tensor::<1>::ones([6 * 64 * 50257], device);
    let first = logits.clone().slice(0..1).into_scalar::<f32>();
    assert_eq!(first, 1.0, "the tensor is on the device");
    point(device, "74MiB-tensor-live");
    drop(logits);
    point(device, "dropped");
    device.memory_cleanup();
    point(device, "after-cleanup");
}

/// A training-like loop that asks for a cleanup seven times per iteration,
/// as a reinforcement-learning loop that cleans up after every phase does:
/// each iteration makes tensors of a size of its own (1–4 MiB), uses them,
/// and drops them.
fn cleanup_loop(device: &Device) {
    const ITERATIONS: usize = 24;
    const CLEANUPS: usize = 7;
    point(device, "start");
    for iteration in 0..ITERATIONS {
        for phase in 0..CLEANUPS {
            let rows = 256 * (1 + (iteration + phase) % 4);
            let a = Tensor::<2>::ones([rows, 1024], device);
            let b = Tensor::<2>::ones([1024, 256], device);
            let c = a.matmul(b).sum();
            let _ = c.into_scalar::<f32>();
            let shown = [0, 5, 11, 23].contains(&iteration) && phase == CLEANUPS - 1;
            if shown {
                point(
                    device,
                    &format!("iteration-{}-before-cleanup", iteration + 1),
                );
            }
            device.memory_cleanup();
            if shown {
                point(device, &format!("iteration-{}", iteration + 1));
            }
        }
    }
}

/// A tensor of 100 × 100 × 100 f32 (3.8 MiB) made and dropped; a second
/// of the same size; then a cleanup.
fn drop_tensor(device: &Device) {
    point(device, "start");
    {
        let first = Tensor::<3>::ones([100, 100, 100], device);
        point(device, "tensor-live");
        drop(first);
    }
    point(device, "dropped");
    let second = Tensor::<3>::ones([100, 100, 100], device);
    point(device, "second-tensor-live");
    drop(second);
    point(device, "second-dropped");
    device.memory_cleanup();
    point(device, "after-cleanup");
}

/// Inference in a loop, the shape of a game-playing agent's: a small MLP
/// run on a fresh batch from the host every iteration, its output read
/// back, for 600 iterations.
fn inference_loop(device: &Device) {
    const ITERATIONS: usize = 600;
    let (input, hidden) = (64, 256);
    device.seed(41);
    let layers: [Linear; 2] = [
        LinearConfig::new(input, hidden).init(device),
        LinearConfig::new(hidden, input).init(device),
    ];
    let relu = Relu::new();
    let mut rng = Rng::new(43);
    point(device, "start");
    for iteration in 0..ITERATIONS {
        let values: Vec<f32> = (0..32 * input).map(|_| rng.unit()).collect();
        let x = Tensor::<2>::from_data(TensorData::new(values, [32, input]), device);
        let y = layers[1].forward(relu.forward(layers[0].forward(x)));
        let _ = y.into_data();
        if [0, 99, 299, 599].contains(&iteration) {
            point(device, &format!("iteration-{}", iteration + 1));
        }
    }
}
