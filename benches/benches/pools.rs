//! The pool engine's reserve+drop against its peers, in one run:
//! `offset-allocator` (the bare O(1) offset allocator) and the system
//! allocator on host memory, on the very same sequences.
//!
//! - `size_class`: a reserve+drop pair of one size, nothing else live, for
//!   a size in each of gpumem's default pools (512 B … 256 MiB).
//! - `depth_pair/<live>`: a reserve+drop pair (sizes 64 B – 4 KiB,
//!   log-uniform) with 1k, 100k or 1M slices live around it.
//! - `depth_churn/<live>`: drop one live slice and reserve another in its
//!   place, live count constant, free lists changing shape.
//!
//! Goals (issue 8): per-op cost at 1M live ≤ 1.5× at 1k; within 2× of
//! offset-allocator. In test mode (`cargo test --benches`) the depths are
//! scaled down (see `gpumem_benches::sizes::depths`).

use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use gpumem_benches::churn::{ChurnPeer, OffsetPeer, PoolsPeer, Steps, SystemPeer, prepare};
use gpumem_benches::sizes::{ChurnPlan, SIZE_CLASSES, SizeMix, depths};
use gpumem_benches::table::{count, human};

fn configure<'c>(c: &'c mut Criterion, name: &str) -> BenchmarkGroup<'c, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(1));
    group
}

fn size_class_pair<P: ChurnPeer>(c: &mut Criterion, mut peer: P, size: u64) {
    let id = BenchmarkId::new(peer.name(), human(size).replace(' ', ""));
    configure(c, "size_class").bench_function(id, |b| {
        b.iter(|| peer.pair(size).expect("reserve+drop pair"))
    });
}

fn size_classes(c: &mut Criterion) {
    for size in SIZE_CLASSES {
        size_class_pair(c, PoolsPeer::new(0), size);
        size_class_pair(c, OffsetPeer::new(0), size);
        size_class_pair(c, SystemPeer::new(0), size);
    }
}

/// Builds `peer`'s live set (untimed), then times one step per iteration.
fn at_depth<P: ChurnPeer>(c: &mut Criterion, group: &str, mut peer: P, plan: &ChurnPlan) {
    let first = prepare(&mut peer, plan).expect("building the live set");
    let mut steps = Steps::new(plan, first);
    let id = BenchmarkId::new(peer.name(), count(plan.live()));
    let churn = group == "depth_churn";
    configure(c, group).bench_function(id, |b| {
        b.iter(|| {
            let (slot, size) = steps.next_step().expect("a plan with steps");
            if churn {
                peer.replace(slot, size).expect("churn step");
            } else {
                peer.pair(size).expect("reserve+drop pair");
            }
        })
    });
}

fn depth(c: &mut Criterion) {
    for group in ["depth_pair", "depth_churn"] {
        for live in depths() {
            let plan = ChurnPlan::new(live, live + 4096, SizeMix::DEPTH, 0xBE7C);
            at_depth(c, group, PoolsPeer::new(live), &plan);
            at_depth(c, group, OffsetPeer::new(live), &plan);
            at_depth(c, group, SystemPeer::new(live), &plan);
        }
    }
}

criterion_group!(benches, size_classes, depth);
criterion_main!(benches);
