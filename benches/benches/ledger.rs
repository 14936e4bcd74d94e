//! The budget ledger's reserve + release pair, uncontended and with two threads.
//!
//! Goal: ≤ 25 ns per pair uncontended. Measured at three levels: the bare
//! [`Ledger`] CAS loop, a manager reservation (local ledger only, RAII token),
//! and a runtime-backed reservation (device budget first, then local). The
//! contended variants run a second thread doing the same pairs on the same
//! ledger for the whole measurement.
//!
//! `baseline_fetch_add_sub` is the floor: one locked add and one locked
//! subtract on a bare atomic, with no limit check. A claim + release pair
//! needs two compare-and-swaps at least, so its ratio to the baseline is the
//! figure that carries across machines (a locked instruction costs ~5 ns on
//! a desktop core and 15–25 ns on a busy virtual one).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use mem_budget::{BudgetDevice, DeviceRuntime, GpuMemoryManager, Ledger, MemoryBudget};

const BYTES: u64 = 4096;

fn legacy_manager() -> Arc<GpuMemoryManager> {
    Arc::new(GpuMemoryManager::new(
        BudgetDevice::host_with_capacity(1 << 30),
        MemoryBudget::bytes(1 << 30),
    ))
}

fn runtime_manager() -> Arc<GpuMemoryManager> {
    let device = BudgetDevice::host_with_capacity(1 << 30);
    let runtime = Arc::new(DeviceRuntime::standard(
        device.clone(),
        MemoryBudget::bytes(1 << 30),
    ));
    Arc::new(GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(1 << 30), runtime).unwrap())
}

/// Time `iters` runs of `pair` while a second thread runs `rival` in a loop.
fn contended(iters: u64, pair: impl Fn(), rival: impl Fn() + Send + Sync) -> Duration {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                rival();
            }
        });
        let start = Instant::now();
        for _ in 0..iters {
            pair();
        }
        let elapsed = start.elapsed();
        stop.store(true, Ordering::Relaxed);
        elapsed
    })
}

fn uncontended(c: &mut Criterion) {
    let mut group = c.benchmark_group("ledger_uncontended");
    let bare = AtomicU64::new(0);
    group.bench_function("baseline_fetch_add_sub", |b| {
        b.iter(|| {
            bare.fetch_add(black_box(BYTES), Ordering::AcqRel);
            bare.fetch_sub(black_box(BYTES), Ordering::AcqRel);
        })
    });
    let ledger = Ledger::new(1 << 30);
    group.bench_function("ledger_claim_release", |b| {
        b.iter(|| {
            ledger.claim(black_box(BYTES)).unwrap();
            ledger.release(black_box(BYTES)).unwrap();
        })
    });
    let manager = legacy_manager();
    group.bench_function("manager_reserve_drop", |b| {
        b.iter(|| drop(black_box(manager.reserve_bytes(black_box(BYTES)).unwrap())))
    });
    let manager = runtime_manager();
    group.bench_function("runtime_manager_reserve_drop", |b| {
        b.iter(|| drop(black_box(manager.reserve_bytes(black_box(BYTES)).unwrap())))
    });
    group.finish();
}

fn two_threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("ledger_two_threads");
    let bare = AtomicU64::new(0);
    group.bench_function("baseline_fetch_add_sub", |b| {
        b.iter_custom(|iters| {
            let pair = || {
                bare.fetch_add(black_box(BYTES), Ordering::AcqRel);
                bare.fetch_sub(black_box(BYTES), Ordering::AcqRel);
            };
            contended(iters, pair, pair)
        })
    });
    let ledger = Ledger::new(1 << 30);
    group.bench_function("ledger_claim_release", |b| {
        b.iter_custom(|iters| {
            let pair = || {
                ledger.claim(black_box(BYTES)).unwrap();
                ledger.release(black_box(BYTES)).unwrap();
            };
            contended(iters, pair, pair)
        })
    });
    let manager = legacy_manager();
    group.bench_function("manager_reserve_drop", |b| {
        b.iter_custom(|iters| {
            let pair = || drop(black_box(manager.reserve_bytes(black_box(BYTES)).unwrap()));
            contended(iters, pair, pair)
        })
    });
    let manager = runtime_manager();
    group.bench_function("runtime_manager_reserve_drop", |b| {
        b.iter_custom(|iters| {
            let pair = || drop(black_box(manager.reserve_bytes(black_box(BYTES)).unwrap()));
            contended(iters, pair, pair)
        })
    });
    group.finish();
}

criterion_group!(benches, uncontended, two_threads);
criterion_main!(benches);
