//! `random`: the shape of RMM's random-allocations benchmark.
//!
//! Each step allocates with 73 % probability (uniform size in 1..=64 MiB)
//! and otherwise frees a uniformly chosen live allocation; an allocation that
//! would push live bytes past the 16 GiB cap frees instead. At the end every
//! live allocation is freed, as the benchmark does.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::WorkloadSpec;
use super::recorder::Recorder;
use crate::trace::Trace;

/// Events before the final drain at scale 1.
pub const RANDOM_OPS: u64 = 100_000;
/// Largest single allocation.
pub const RANDOM_MAX_SIZE: u64 = 64 << 20;
/// Cap on live bytes.
pub const RANDOM_LIVE_CAP: u64 = 16 << 30;
/// Probability of choosing to allocate, in percent.
pub const ALLOC_PERCENT: u32 = 73;

pub(crate) fn generate(spec: &WorkloadSpec) -> Trace {
    let mut rng = SmallRng::seed_from_u64(spec.seed);
    let mut rec = Recorder::new();
    let mut live: Vec<u64> = Vec::new();
    let target = spec.scaled(RANDOM_OPS);
    while rec.ops() < target {
        if live.is_empty() || rng.random_range(0..100) < ALLOC_PERCENT {
            let size = rng.random_range(1..=RANDOM_MAX_SIZE);
            if rec.live_bytes() + size <= RANDOM_LIVE_CAP {
                live.push(rec.alloc(size));
                continue;
            }
        }
        let victim = rng.random_range(0..live.len());
        rec.free(live.swap_remove(victim));
    }
    rec.free_all(live);
    rec.finish()
}
