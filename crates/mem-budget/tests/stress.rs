//! Threads racing the ledgers: never oversubscribed, nothing lost.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use mem_budget::{BudgetDevice, DeviceRuntime, GpuMemoryManager, MemoryBudget};

const THREADS: usize = 4;
const ROUNDS: usize = 2000;

/// Run `work` on `THREADS` threads while an observer checks `observe() ≤ limit`
/// as often as it can; returns the number of observations. The workers
/// start once the observer is watching: on a loaded machine with few cores
/// they could otherwise finish before it is first scheduled, and the race
/// would go unobserved.
fn race(
    limit: u64,
    observe: impl Fn() -> u64 + Send + Sync,
    work: impl Fn(usize) + Send + Sync,
) -> u64 {
    let done = AtomicBool::new(false);
    let watching = AtomicBool::new(false);
    let start = Barrier::new(THREADS + 1);
    thread::scope(|s| {
        let observer = s.spawn(|| {
            start.wait();
            let mut seen = 0u64;
            while !done.load(Ordering::Acquire) {
                let now = observe();
                // Before the check: a failed one must not leave the workers waiting.
                watching.store(true, Ordering::Release);
                assert!(
                    now <= limit,
                    "observed {now} bytes claimed against a limit of {limit}"
                );
                seen += 1;
            }
            seen
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (start, work, watching) = (&start, &work, &watching);
                s.spawn(move || {
                    start.wait();
                    while !watching.load(Ordering::Acquire) {
                        thread::yield_now();
                    }
                    work(t);
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Release);
        observer.join().unwrap()
    })
}

#[test]
fn racing_reservations_and_allocations_never_oversubscribe_either_budget() {
    let device = BudgetDevice::host_with_capacity(1 << 24);
    let runtime = Arc::new(DeviceRuntime::standard(
        device.clone(),
        MemoryBudget::bytes(48 << 10),
    ));
    let global = runtime.global_budget().unwrap().clone();
    let manager = Arc::new(
        GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(64 << 10), runtime).unwrap(),
    );
    // Bytes the workers believe they hold, summed: must never pass the tighter limit.
    let held = AtomicU64::new(0);
    let observations = race(
        48 << 10,
        || global.charged().max(held.load(Ordering::Acquire)),
        |t| {
            for i in 0..ROUNDS {
                let bytes = 1024 + ((t * 7919 + i * 104_729) % 8192) as u64;
                match i % 3 {
                    0 => {
                        if let Ok(token) = manager.reserve_bytes(bytes) {
                            held.fetch_add(bytes, Ordering::AcqRel);
                            held.fetch_sub(token.bytes(), Ordering::AcqRel);
                        }
                    }
                    1 => {
                        if let Ok(slice) = manager.alloc::<u8>(bytes as usize) {
                            held.fetch_add(bytes, Ordering::AcqRel);
                            held.fetch_sub(slice.bytes(), Ordering::AcqRel);
                        }
                    }
                    _ => {
                        if let Ok(block) =
                            manager.alloc_raw(bytes as usize, mem_budget::AllocTag::SCRATCH)
                        {
                            held.fetch_add(bytes, Ordering::AcqRel);
                            block.write(&[t as u8; 16]).unwrap();
                            held.fetch_sub(block.bytes(), Ordering::AcqRel);
                        }
                    }
                }
                assert!(manager.allocated_bytes() <= 48 << 10);
            }
        },
    );
    assert!(observations > 0);
    assert_eq!(
        (manager.allocated_bytes(), global.charged()),
        (0, 0),
        "every claim came back"
    );
    assert!(
        manager.peak_bytes() <= 48 << 10,
        "peak {} past the device budget",
        manager.peak_bytes()
    );
    assert_eq!(manager.deallocation_failure_count(), 0);
}

#[test]
fn a_parent_and_its_overlay_racing_to_the_limit_fill_it_exactly_and_never_pass_it() {
    const LIMIT: u64 = 64_000;
    const CHUNK: u64 = 100;
    let device = BudgetDevice::host_with_capacity(1 << 24);
    let parent = Arc::new(GpuMemoryManager::new(
        device.clone(),
        MemoryBudget::bytes(LIMIT),
    ));
    let runtime = Arc::new(DeviceRuntime::standard(device, MemoryBudget::unlimited()));
    let overlay = parent.with_runtime_overlay(runtime).unwrap();
    assert_eq!(overlay.budget_limit_bytes(), LIMIT);
    for round in 0..5 {
        let held = AtomicU64::new(0);
        let won: [AtomicU64; THREADS] = Default::default();
        let slices = std::sync::Mutex::new(Vec::new());
        race(
            LIMIT,
            || parent.allocated_bytes().max(held.load(Ordering::Acquire)),
            |t| {
                // Half the threads allocate through the parent, half through the overlay.
                let manager = if t % 2 == 0 { &parent } else { &overlay };
                let mut mine = Vec::new();
                while let Ok(slice) = manager.alloc::<u8>(CHUNK as usize) {
                    held.fetch_add(CHUNK, Ordering::AcqRel);
                    won[t].fetch_add(1, Ordering::Relaxed);
                    mine.push(slice);
                }
                slices.lock().unwrap().extend(mine);
            },
        );
        let total: u64 = won.iter().map(|w| w.load(Ordering::Relaxed)).sum::<u64>() * CHUNK;
        assert_eq!(
            total, LIMIT,
            "round {round}: the racers filled the budget exactly"
        );
        assert_eq!(parent.allocated_bytes(), LIMIT);
        assert_eq!(
            overlay.allocated_bytes(),
            LIMIT,
            "one ledger, seen from both"
        );
        drop(slices);
        assert_eq!(
            parent.allocated_bytes(),
            0,
            "round {round}: counters back to start"
        );
    }
    assert_eq!(parent.peak_bytes(), LIMIT);
}

#[test]
fn racing_reservations_on_one_manager_are_exact_to_the_byte() {
    let manager = Arc::new(GpuMemoryManager::new(
        BudgetDevice::host_with_capacity(1 << 20),
        MemoryBudget::bytes(10_000),
    ));
    let granted = AtomicU64::new(0);
    let tokens = std::sync::Mutex::new(Vec::new());
    race(
        10_000,
        || manager.allocated_bytes(),
        |_| {
            let mut mine = Vec::new();
            for _ in 0..ROUNDS {
                if let Ok(token) = manager.reserve_bytes(7) {
                    granted.fetch_add(7, Ordering::Relaxed);
                    mine.push(token);
                }
            }
            tokens.lock().unwrap().extend(mine);
        },
    );
    // 10_000 / 7 = 1428 tokens fit; all 8000 attempts raced for them.
    assert_eq!(granted.load(Ordering::Relaxed), 1428 * 7);
    assert_eq!(manager.allocated_bytes(), 1428 * 7);
    drop(tokens);
    assert_eq!((manager.allocated_bytes(), manager.alloc_count()), (0, 0));
}
