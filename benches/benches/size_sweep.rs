//! `size_sweep/<bytes>`: one reservation plus its free through `Device`'s
//! defaults (arenas on the simulated 80 GiB device), for slices of 2 MiB
//! to 64 GiB in powers of two, between two live 3 MiB neighbours that
//! share its end slots (`gpumem_benches::size_sweep`). The chunks are
//! mapped before the clock starts, so no pair calls the driver: what grows
//! with the size is per-slot bookkeeping. The goal is a flat line (the
//! largest within 1.25× of the smallest); where it stands is in
//! docs/benchmarks.md ("A reservation's cost against its size").
//!
//! Test mode (`cargo test --benches`) runs one pair at the smallest, a
//! middle and the largest size.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gpumem_benches::size_sweep::{LARGEST, SMALLEST, SizeSweep, sweep_sizes};

fn sizes() -> Vec<u64> {
    if cfg!(debug_assertions) {
        vec![SMALLEST, 1 << 30, LARGEST]
    } else {
        sweep_sizes().collect()
    }
}

fn size_sweep(c: &mut Criterion) {
    let mut group = c.benchmark_group("size_sweep");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .throughput(Throughput::Elements(1));
    for size in sizes() {
        let sweep = SizeSweep::new(size).expect("the sweep's device and first reservation");
        group.bench_function(BenchmarkId::from_parameter(size), |b| {
            b.iter(|| sweep.pairs(1).expect("a reserve+free pair"))
        });
    }
    group.finish();
}

criterion_group!(benches, size_sweep);
criterion_main!(benches);
