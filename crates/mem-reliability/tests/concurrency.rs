//! Races: handles dropped from many threads while their owner reserves
//! (the pools' lock-free drop queue), and a budget manager and its overlay
//! racing each other to their shared limit (mem-budget's exact ledger).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;

use mem_budget::{AllocTag, BudgetError};
use mem_reliability::{Limits, World, pattern};

const DROPPERS: usize = 4;
/// Fewer under miri, which interprets every step (and checks every race).
const ROUNDS: usize = if cfg!(miri) { 24 } else { 400 };

#[test]
fn handles_dropped_on_many_threads_while_the_owner_reserves_lose_nothing() {
    // Room for every batch still in a channel: the race is about the drop
    // queue, not about running out.
    let mut world = World::new(Limits {
        host_capacity: 256 << 20,
        global: 128 << 20,
        local: 1 << 20,
    });
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..DROPPERS).map(|_| mpsc::channel()).unzip();
    let dropped = AtomicU64::new(0);
    let mut kept = Vec::new();
    thread::scope(|s| {
        for rx in receivers {
            let dropped = &dropped;
            s.spawn(move || {
                for batch in rx {
                    let batch: Vec<mem_pools::ManagedMemoryHandle> = batch;
                    dropped.fetch_add(batch.len() as u64, Ordering::Relaxed);
                    drop(batch);
                }
            });
        }
        let manager = world.manager(0);
        for round in 0..ROUNDS {
            let size = 256 + (round as u64 * 997) % 20_000;
            let batch: Vec<_> = (0..3).map(|_| manager.reserve(size).unwrap()).collect();
            // Every tenth allocation stays with the owner, with its bytes.
            if round % 10 == 0 {
                let keep = manager.reserve(size).unwrap();
                manager
                    .write(keep.binding(), &pattern(round as u64, 32))
                    .unwrap();
                kept.push((round, keep));
            }
            senders[round % DROPPERS].send(batch).unwrap();
        }
        drop(senders);
    });
    assert_eq!(dropped.load(Ordering::Relaxed), (ROUNDS * 3) as u64);
    let manager = world.manager(0);
    manager.drain_drops();
    assert_eq!(manager.memory_usage().number_allocs, kept.len() as u64);
    for (round, handle) in &kept {
        let mut out = [0u8; 32];
        manager.read(handle.binding(), &mut out).unwrap();
        assert_eq!(out.to_vec(), pattern(*round as u64, 32), "round {round}");
    }
    drop(kept);
    manager.drain_drops();
    assert_eq!(manager.memory_usage().number_allocs, 0);
    world.finish().unwrap();
}

#[test]
fn a_parent_and_its_overlay_racing_to_the_limit_never_oversubscribe() {
    let limits = Limits::default();
    let world = World::new(limits);
    let (parent, overlay) = world.budgets();
    let global = world.device().global().clone();
    let done = AtomicBool::new(false);
    let start = Barrier::new(5);
    let (granted, refused) = (AtomicU64::new(0), AtomicU64::new(0));
    thread::scope(|s| {
        let observer = s.spawn(|| {
            start.wait();
            // Observe at least once, even when a loaded machine schedules
            // this thread only after the workers are done; the ledgers'
            // own peaks (checked below) cover what it may not see.
            let mut seen = 0u64;
            loop {
                let finished = done.load(Ordering::Acquire);
                let local = parent.allocated_bytes();
                assert!(
                    local <= limits.local,
                    "local ledger at {local} > {}",
                    limits.local
                );
                assert!(global.charged() <= limits.global);
                seen += 1;
                if finished {
                    break;
                }
            }
            seen
        });
        let workers: Vec<_> = (0..4)
            .map(|t| {
                let manager = if t % 2 == 0 {
                    Arc::clone(parent)
                } else {
                    Arc::clone(overlay)
                };
                let (start, granted, refused) = (&start, &granted, &refused);
                s.spawn(move || {
                    start.wait();
                    let mut held = Vec::new();
                    for i in 0..ROUNDS {
                        let bytes = 40_000 + ((t * 7919 + i * 104_729) % 160_000);
                        let claim = if i % 3 == 0 {
                            manager.reserve_bytes(bytes as u64).map(|r| (Some(r), None))
                        } else {
                            manager
                                .alloc_raw(bytes, AllocTag::SCRATCH)
                                .map(|b| (None, Some(b)))
                        };
                        match claim {
                            Ok(held_now) => {
                                granted.fetch_add(1, Ordering::Relaxed);
                                held.push(held_now);
                            }
                            Err(BudgetError::ResourceExhausted { .. }) => {
                                refused.fetch_add(1, Ordering::Relaxed);
                                // Make room: give back the oldest half.
                                let half = held.len().div_ceil(2);
                                held.drain(..half);
                            }
                            Err(other) => panic!("unexpected refusal: {other}"),
                        }
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Release);
        assert!(observer.join().unwrap() > 0);
    });
    let (granted, refused) = (granted.into_inner(), refused.into_inner());
    assert!(
        granted > 0 && refused > 0,
        "granted {granted}, refused {refused}: the race reached the limit"
    );
    assert_eq!(parent.allocated_bytes(), 0);
    assert_eq!(overlay.allocated_bytes(), 0);
    assert_eq!(world.device().global().charged(), 0);
    assert!(world.device().global().peak() <= limits.global);
    assert!(parent.peak_bytes() <= limits.local);
    world.finish().unwrap();
}

#[test]
fn pools_and_budgets_racing_for_one_global_budget_stay_consistent() {
    let mut world = World::new(Limits::default());
    let (parent, _) = world.budgets();
    let parent = Arc::clone(parent);
    let stop = AtomicBool::new(false);
    let attempts = AtomicU64::new(0);
    thread::scope(|s| {
        s.spawn(|| {
            let mut held = Vec::new();
            while !stop.load(Ordering::Acquire) {
                match parent.alloc_raw(200_000, AllocTag::SCRATCH) {
                    Ok(b) => held.push(b),
                    Err(BudgetError::ResourceExhausted { .. }) => held.clear(),
                    Err(other) => panic!("unexpected budget error: {other}"),
                }
                attempts.fetch_add(1, Ordering::Release);
            }
        });
        // Start once the budget side is running, so the two overlap.
        while attempts.load(Ordering::Acquire) < 4 {
            thread::yield_now();
        }
        let manager = world.manager(1);
        let mut live = Vec::new();
        for i in 0..ROUNDS {
            match manager.reserve(70_000 + (i as u64 % 5) * 40_000) {
                Ok(h) => live.push(h),
                Err(mem_pools::IoError::Storage(mem_storage::StorageError::OutOfMemory {
                    ..
                })) => {
                    live.clear();
                    manager.cleanup(true);
                }
                Err(other) => panic!("unexpected pool error: {other}"),
            }
        }
        drop(live);
        stop.store(true, Ordering::Release);
    });
    // Every invariant (host outstanding = pages + blocks, ledgers exact) holds.
    world.check(0).unwrap();
    world.finish().unwrap();
}
