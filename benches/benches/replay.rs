//! Replay throughput (ns per op) of every built-in workload of the
//! `gpumem` command, through gpumem's pools on a simulated 80 GiB device
//! and through the peers: `offset-allocator` over an 80 GiB heap and the
//! system allocator on host memory. The replay loop is the command's own
//! (`gpumem_replay::replay::replay`); only its loop is timed (`wall_ns`), not
//! building the backend or freeing what is left at the end.
//!
//! `replay_span/<slots>`: the arena's per-slot cost on its own — a slice
//! spanning 1, 16, 512 or 4096 chunk slots of 2 MiB (2 MiB … 8 GiB: the
//! `growth` workload's buffers) freed and reserved again in place, its
//! chunks mapped (no driver call), between live 3 MiB neighbours sharing
//! its edge slots (`cubecl-peers`' `span:SLOTS`). The goal is a cost that
//! does not grow with the slots, as CubeCL's does not; where it stands is
//! in docs/benchmarks.md ("Scaling").

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gpumem_benches::DEVICE_BYTES;
use gpumem_benches::device_peer::default_device;
use gpumem_benches::fragmentation::{program, workloads};
use gpumem_benches::replay_peers::{MallocBackend, OffsetBackend};
use gpumem_replay::replay::{AllocBackend, Program, ReplayOptions, replay};
use gpumem_replay::trace::Event;
use gpumem_replay::workload::WorkloadSpec;

fn replay_wall<B: AllocBackend>(program: &Program, iters: u64, make: impl Fn() -> B) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let mut backend = make();
        let run = replay("bench", program, &mut backend, &ReplayOptions::default())
            .expect("replay of a built-in workload");
        total += Duration::from_nanos(run.report.wall_ns);
    }
    total
}

fn workloads_through_peers(c: &mut Criterion) {
    // Test mode replays each workload once; keep that short.
    let scale = if cfg!(debug_assertions) { 0.05 } else { 1.0 };
    let spec = WorkloadSpec { seed: 42, scale };
    for &workload in workloads() {
        let program = program(workload, &spec).expect("a built-in workload");
        let mut group = c.benchmark_group(format!("replay_{}", workload.name()));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3))
            .throughput(Throughput::Elements(program.ops.len() as u64));
        let ops = program.ops.len();
        group.bench_function(BenchmarkId::new("gpumem-device", ops), |b| {
            b.iter_custom(|iters| {
                replay_wall(&program, iters, || {
                    default_device(&program, DEVICE_BYTES).expect("the default device builds")
                })
            })
        });
        group.bench_function(BenchmarkId::new("offset-allocator", ops), |b| {
            b.iter_custom(|iters| {
                replay_wall(&program, iters, || {
                    OffsetBackend::new(DEVICE_BYTES, program.slots)
                })
            })
        });
        group.bench_function(BenchmarkId::new("system", ops), |b| {
            b.iter_custom(|iters| replay_wall(&program, iters, MallocBackend::new))
        });
        group.finish();
    }
}

/// `pairs` reserve+free pairs of one slice of `bytes` between two live
/// 3 MiB neighbours (allocated once around it, so they share its edge
/// slots), on the default stream.
fn span_pairs(bytes: u64, pairs: u64) -> Program {
    let alloc = |id, size| Event::Alloc {
        id,
        size,
        stream: 0,
    };
    let mut events = vec![alloc(0, 3 << 20), alloc(1, bytes), alloc(2, 3 << 20)];
    // The slice freed is the last one reserved (id 1, then 3, 4, ...).
    for id in 3..3 + pairs {
        let last = if id == 3 { 1 } else { id - 1 };
        events.push(Event::Free { id: last });
        events.push(alloc(id, bytes));
    }
    Program::compile(&events).expect("a well-formed span program")
}

fn spans_through_peers(c: &mut Criterion) {
    let pairs = if cfg!(debug_assertions) { 20 } else { 2_000 };
    for slots in [1u64, 16, 512, 4096] {
        let program = span_pairs(slots << 21, pairs);
        let mut group = c.benchmark_group("replay_span");
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(2))
            .throughput(Throughput::Elements(program.ops.len() as u64));
        group.bench_function(BenchmarkId::new("gpumem-device", slots), |b| {
            b.iter_custom(|iters| {
                replay_wall(&program, iters, || {
                    default_device(&program, DEVICE_BYTES).expect("the default device builds")
                })
            })
        });
        group.bench_function(BenchmarkId::new("offset-allocator", slots), |b| {
            b.iter_custom(|iters| {
                replay_wall(&program, iters, || {
                    OffsetBackend::new(DEVICE_BYTES, program.slots)
                })
            })
        });
        group.finish();
    }
}

criterion_group!(benches, workloads_through_peers, spans_through_peers);
criterion_main!(benches);
