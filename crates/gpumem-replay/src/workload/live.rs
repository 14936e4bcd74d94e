//! `live`: 20,000 small slices held live, then one freed at random and
//! another reserved, 20,000 times.
//!
//! Why a workload of its own: it isolates what an operation costs when an
//! arena holds many live slices. An allocator whose pages scan their
//! slices pays per live slice (CubeCL's engine: tens of µs an operation
//! here); one with a free index pays per operation. Sizes are 512 B to
//! 64 KiB, the small tensors a model keeps live (biases, norms, scalars),
//! so memory is a few hundred MiB and, once the slices are placed, no
//! driver call is needed. `scale` multiplies both the slices held and the
//! turnovers.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::WorkloadSpec;
use super::recorder::Recorder;
use crate::trace::Trace;

/// Slices held live, and then turned over one at a time, at scale 1.
pub const LIVE_SLICES: u64 = 20_000;
/// The sizes drawn, uniformly.
pub const LIVE_SIZES: [u64; 5] = [512, 1 << 10, 4 << 10, 16 << 10, 64 << 10];

pub(crate) fn generate(spec: &WorkloadSpec) -> Trace {
    let mut rng = SmallRng::seed_from_u64(spec.seed);
    let mut size = move || LIVE_SIZES[rng.random_range(0..LIVE_SIZES.len())];
    let mut victims = SmallRng::seed_from_u64(spec.seed ^ 0x5EED);
    let mut rec = Recorder::new();
    let n = spec.scaled(LIVE_SLICES);
    rec.tag("small slices, held");
    let mut live: Vec<u64> = (0..n).map(|_| rec.alloc(size())).collect();
    rec.tag("small slices, turned over");
    for _ in 0..n {
        let victim = victims.random_range(0..live.len());
        rec.free(live.swap_remove(victim));
        live.push(rec.alloc(size()));
    }
    rec.free_all(live);
    rec.finish()
}
