//! `span`: one 8 GiB slice freed and reserved again in place, 2,000
//! times, between two live 3 MiB neighbours.
//!
//! Nothing here fragments and, after the first reservation, nothing calls
//! the driver: the shape isolates what a reservation costs on the host as
//! a function of how many 2 MiB granules it spans (4,096 here). A caching
//! allocator that carves a slice as one range pays the same for 8 GiB as
//! for 8 KiB; one that keeps per-granule state pays per granule. The
//! large buffers of the `growth` workload and a KV-cache pool reallocated
//! per batch have this shape. There is no randomness, so the seed is
//! ignored; `scale` multiplies the pairs.

use super::WorkloadSpec;
use super::recorder::Recorder;
use crate::trace::Trace;
use gpumem::storage::units::{GIB, MIB};

/// Free+reserve pairs at scale 1.
pub const SPAN_PAIRS: u64 = 2_000;
/// The slice freed and reserved again: 4,096 granules of 2 MiB.
pub const SPAN_BYTES: u64 = 8 * GIB;

pub(crate) fn generate(spec: &WorkloadSpec) -> Trace {
    let mut rec = Recorder::new();
    rec.tag("neighbours");
    rec.alloc(3 * MIB);
    rec.tag("the large slice");
    let mut slice = rec.alloc(SPAN_BYTES);
    rec.tag("neighbours");
    rec.alloc(3 * MIB);
    rec.tag("the large slice, freed and asked again");
    for _ in 0..spec.scaled(SPAN_PAIRS) {
        rec.free(slice);
        slice = rec.alloc(SPAN_BYTES);
    }
    rec.finish()
}
