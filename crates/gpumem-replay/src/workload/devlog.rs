//! `devlog`: the two fragmentation cases PyTorch's allocator devlog documents.
//!
//! 1. Eight 16 MiB tensors, all freed, then four 32 MiB tensors: a caching
//!    allocator that cannot merge the freed 16 MiB blocks holds 256 MiB for
//!    128 MiB live.
//! 2. A 2 MiB tensor then a 0.5 MiB one: the small/large pool boundary makes
//!    PyTorch reserve 22 MiB for 2.5 MiB.
//!
//! Each round runs both cases and frees everything; rounds repeat so the
//! replay also shows whether freed memory is reused. There is no randomness,
//! so the seed is ignored.

use super::WorkloadSpec;
use super::recorder::Recorder;
use crate::trace::Trace;
use gpumem::storage::units::MIB;

/// Rounds at scale 1.
pub const DEVLOG_ROUNDS: u64 = 50;

pub(crate) fn generate(spec: &WorkloadSpec) -> Trace {
    let mut rec = Recorder::new();
    for _ in 0..spec.scaled(DEVLOG_ROUNDS) {
        rec.tag("case 1: eight 16 MiB, then four 32 MiB");
        let small: Vec<u64> = (0..8).map(|_| rec.alloc(16 * MIB)).collect();
        rec.free_all(small);
        let large: Vec<u64> = (0..4).map(|_| rec.alloc(32 * MIB)).collect();
        rec.free_all(large);
        rec.tag("case 2: 2 MiB and 0.5 MiB");
        let two = rec.alloc(2 * MIB);
        let half = rec.alloc(MIB / 2);
        rec.free(two);
        rec.free(half);
    }
    rec.finish()
}
