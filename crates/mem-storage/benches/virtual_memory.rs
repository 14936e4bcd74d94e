//! What each virtual-memory call costs on the host and simulated backends,
//! so docs/storage.md can state the cost of every knob of an arena.
//!
//! Pairs are measured (map + unmap, create + release, reserve + free) so
//! every iteration leaves the backend as it found it; 1k chunks stay mapped
//! around the pair so the table's ordered maps are measured at depth.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use mem_storage::units::{GIB, MIB};
use mem_storage::{HostVirtualMemory, SimulatedVirtualMemory, VirtualMemory};

const LIVE: u64 = 1_000;

fn pairs<V: VirtualMemory>(c: &mut Criterion, name: &str, vm: &V) {
    let g = vm.granularity();
    let range = vm.reserve_range((LIVE + 1) * g).unwrap();
    let live: Vec<_> = (0..LIVE).map(|_| vm.create_chunk(g).unwrap()).collect();
    for (i, &chunk) in live.iter().enumerate() {
        vm.map(range.id, i as u64 * g, chunk).unwrap();
    }
    let spare = vm.create_chunk(g).unwrap();
    let mut group = c.benchmark_group(format!("vm_{name}"));
    group.bench_function("map_unmap_2mib", |b| {
        b.iter(|| {
            vm.map(range.id, black_box(LIVE * g), spare).unwrap();
            vm.unmap(range.id, LIVE * g, g).unwrap();
        })
    });
    group.bench_function("create_release_2mib", |b| {
        b.iter(|| {
            vm.release_chunk(vm.create_chunk(black_box(g)).unwrap())
                .unwrap()
        })
    });
    group.bench_function("reserve_free_1gib", |b| {
        b.iter(|| {
            vm.free_range(vm.reserve_range(black_box(GIB)).unwrap().id)
                .unwrap()
        })
    });
    if vm.holds_memory() {
        let buf = vec![7u8; 4096];
        group.bench_function("write_4kib", |b| {
            b.iter(|| vm.write_mapped(black_box(range.base), &buf).unwrap())
        });
        // A chunk's whole life with its memory touched: what growing an
        // arena by one chunk and giving it back costs, page faults included.
        group.bench_function("create_map_fill_unmap_release_2mib", |b| {
            b.iter(|| {
                let chunk = vm.create_chunk(g).unwrap();
                let at = vm.map(range.id, LIVE * g, chunk).unwrap();
                vm.fill_mapped(at, 1, g).unwrap();
                vm.unmap(range.id, LIVE * g, g).unwrap();
                vm.release_chunk(chunk).unwrap();
            })
        });
    }
    group.finish();
    vm.unmap(range.id, 0, LIVE * g).unwrap();
    for chunk in live.into_iter().chain([spare]) {
        vm.release_chunk(chunk).unwrap();
    }
    vm.free_range(range.id).unwrap();
}

fn backends(c: &mut Criterion) {
    pairs(c, "sim", &SimulatedVirtualMemory::new(80 * GIB));
    pairs(
        c,
        "host",
        &HostVirtualMemory::with_capacity(4 * GIB + 64 * MIB).unwrap(),
    );
}

criterion_group!(benches, backends);
criterion_main!(benches);
