//! What one allocate + free pair costs on each backend and through each
//! adaptor, so docs/storage.md can say what a layer of the stack costs.
//!
//! Every measurement is an allocate immediately followed by its free, with
//! a set of allocations kept live around it (1k or 100k) so the cost of
//! the backends' ordered maps at depth shows.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mem_storage::units::GIB;
use mem_storage::{
    ComputeStorage, DevicePtr, DeviceResource, FaultInjection, HostResource, LoggingResource,
    ResourceStorage, SimulatedResource, StatsResource, StreamId, TrackingResource,
};

const S: StreamId = StreamId::DEFAULT;

/// Keep `live` allocations of 4 KiB around while measuring pairs.
fn pair<R: DeviceResource>(c: &mut Criterion, group: &str, name: &str, r: &R, live: usize) {
    let held: Vec<DevicePtr> = (0..live).map(|_| r.allocate(4096, S).unwrap()).collect();
    c.benchmark_group(group)
        .bench_function(BenchmarkId::new(name, live), |b| {
            b.iter(|| {
                let p = r.allocate(black_box(4096), S).unwrap();
                r.deallocate(p, 4096, S).unwrap();
            })
        });
    for p in held {
        r.deallocate(p, 4096, S).unwrap();
    }
}

fn backends(c: &mut Criterion) {
    for live in [1_000, 100_000] {
        pair(c, "backend", "sim", &SimulatedResource::new(80 * GIB), live);
    }
    pair(
        c,
        "backend",
        "host",
        &HostResource::with_capacity(4 * GIB),
        1_000,
    );
}

fn adaptors(c: &mut Criterion) {
    let sim = || SimulatedResource::new(80 * GIB);
    pair(
        c,
        "adaptor_over_sim",
        "stats",
        &StatsResource::new(sim()),
        1_000,
    );
    pair(
        c,
        "adaptor_over_sim",
        "fault",
        &FaultInjection::new(sim()),
        1_000,
    );
    pair(
        c,
        "adaptor_over_sim",
        "tracking",
        &TrackingResource::new(sim()),
        1_000,
    );
    let log = LoggingResource::new(sim());
    pair(c, "adaptor_over_sim", "logging", &log, 1_000);
    drop(log.drain());
}

fn storage(c: &mut Criterion) {
    let mut pages = ResourceStorage::new(SimulatedResource::new(80 * GIB));
    c.bench_function("storage/sim_alloc_dealloc_flush", |b| {
        b.iter(|| {
            let page = pages.alloc(black_box(1 << 21)).unwrap();
            pages.dealloc(page.id).unwrap();
            pages.flush().unwrap();
        })
    });
}

criterion_group!(benches, backends, adaptors, storage);
criterion_main!(benches);
