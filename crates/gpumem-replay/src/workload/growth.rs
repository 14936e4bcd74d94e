//! `growth`: buffers that grow by reallocation into GiB sizes — a
//! dynamic array, a KV cache or an optimizer state resized without
//! knowing its final size (`torch.cat` in a loop, `Vec` doubling on the
//! device).
//!
//! - Weights (eight tensors of 256 MiB–1 GiB, ≈5 GiB) are allocated once
//!   inside a persistent-mode window.
//! - Each step starts four buffers of 64–256 MiB. Six times, each buffer
//!   grows: a new buffer 1.3–1.8 × the old one is allocated, the old one
//!   freed (the copy between them is the kernel's business). Between two
//!   growths eight short-lived scratch tensors of 1–64 MiB come and go.
//!   After six growths a buffer is 4.8–34 × its first size, up to ≈8 GiB.
//! - At the step's end the four buffers are freed; the next step starts
//!   small again, so memory swings by tens of GiB every step.
//!
//! This is the shape where the number of 2 MiB granules a reservation
//! spans (hundreds to thousands) and the bytes freed and asked again
//! within a few ops dominate: per-granule work on the host and the
//! driver calls that move or recreate physical memory.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::WorkloadSpec;
use super::recorder::Recorder;
use crate::trace::{Mode, Trace};
use gpumem::storage::units::MIB;

/// Steps at scale 1 (152 events each: about 61,000 events).
pub const GROWTH_STEPS: u64 = 400;
/// Buffers growing side by side in a step.
const BUFFERS: usize = 4;
/// Growths per buffer and step.
const GROWTHS: usize = 6;
/// Scratch tensors between two growths.
const SCRATCH: usize = 8;

/// `bytes` rounded up to 512 B, as PyTorch's allocator rounds requests.
fn rounded(bytes: f64) -> u64 {
    (bytes as u64).div_ceil(512) * 512
}

pub(crate) fn generate(spec: &WorkloadSpec) -> Trace {
    let mut rng = SmallRng::seed_from_u64(spec.seed);
    let mut rec = Recorder::new();
    rec.mode(Mode::Persistent);
    rec.tag("weights");
    for _ in 0..8 {
        rec.alloc(rng.random_range(256..=1024) * MIB);
    }
    rec.mode(Mode::Auto);
    for _ in 0..spec.scaled(GROWTH_STEPS) {
        rec.tag("growing buffers");
        let mut buffers: Vec<(u64, u64)> = (0..BUFFERS)
            .map(|_| {
                let size = rng.random_range(64..=256) * MIB;
                (rec.alloc(size), size)
            })
            .collect();
        for _ in 0..GROWTHS {
            rec.tag("growing buffers");
            for (id, size) in buffers.iter_mut() {
                let grown = rounded(*size as f64 * rng.random_range(1.3..1.8));
                let new = rec.alloc(grown);
                rec.free(*id);
                (*id, *size) = (new, grown);
            }
            rec.tag("scratch");
            let scratch: Vec<u64> = (0..SCRATCH)
                .map(|_| rec.alloc(rng.random_range(1..=64) * MIB))
                .collect();
            rec.free_all(scratch);
        }
        rec.free_all(buffers.into_iter().map(|(id, _)| id));
    }
    rec.finish()
}
