//! Fault injection: a storage that fails its k-th page allocation (for every
//! k of a scenario) or every copy wait leaves the engine consistent, and
//! nothing leaks once everything is dropped.

mod common;

use std::sync::Arc;

use common::*;
use mem_pools::{
    ManagedMemoryHandle, MemoryManagement, MemoryManagementOptions, ServerLogger, StorageCopyQueue,
    TargetRoom,
};
use mem_storage::{
    ComputeStorage, FaultInjection, FaultPlan, HostResource, Operation, ResourceStorage,
};

type Faulty = ResourceStorage<FaultInjection<HostResource>>;

fn faulty(plan: FaultPlan) -> MemoryManagement<Faulty> {
    let resource = FaultInjection::new(HostResource::new())
        .counting(&[Operation::Allocate])
        .with_plan(plan);
    MemoryManagement::from_configuration(
        ResourceStorage::new(resource),
        &props(),
        growable(),
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    )
}

/// Reserve, grow, drop, relocate and clean up; returns how many reserves failed.
fn scenario(mm: &mut MemoryManagement<Faulty>) -> usize {
    let mut live: Vec<(ManagedMemoryHandle, u64)> = Vec::new();
    let mut failed = 0;
    let sizes = [
        1000,
        20 * KIB,
        50 * KIB,
        90 * KIB,
        300,
        200 * KIB,
        3 * MIB,
        10 * KIB,
    ];
    for (i, &size) in sizes.iter().cycle().take(24).enumerate() {
        let before = mm.memory_usage();
        match mm.reserve(size) {
            Ok(h) => {
                mm.write(h.binding(), &pattern(i as u64, 64.min(size as usize)))
                    .unwrap();
                live.push((h, i as u64));
            }
            Err(_) => {
                failed += 1;
                mm.drain_drops();
                assert_eq!(
                    mm.memory_usage().number_allocs,
                    before.number_allocs,
                    "a failed reserve changed the live set"
                );
            }
        }
        if i % 3 == 2 {
            live.remove(0);
        }
        if i % 8 == 7 {
            let plan = mm.plan_relocation(TargetRoom::MayAllocate);
            if let Ok(landed) = mm.copy_relocation(plan, &mut StorageCopyQueue) {
                mm.commit_relocation(landed).unwrap();
            }
            mm.cleanup(i % 16 == 15);
        }
        for (h, seed) in &live {
            let len = 64.min(h.size() as usize);
            let mut out = vec![0; len];
            mm.read(h.binding(), &mut out).unwrap();
            assert_eq!(out, pattern(*seed, len));
        }
    }
    failed
}

fn assert_nothing_left(mut mm: MemoryManagement<Faulty>) {
    mm.storage().resource().disarm();
    mm.cleanup(true);
    assert_eq!(mm.memory_usage(), Default::default());
    assert_eq!(mm.storage().bytes_allocated(), 0);
    assert_eq!(mm.storage().resource().inner().live_allocations(), 0);
}

#[test]
fn failing_the_kth_page_allocation_for_every_k_leaves_the_engine_consistent() {
    let mut clean = faulty(FaultPlan::Never);
    assert_eq!(scenario(&mut clean), 0);
    let calls = clean.storage().resource().calls();
    assert!(calls > 5, "the scenario allocates pages ({calls})");
    assert_nothing_left(clean);
    for k in 1..=calls {
        let mut mm = faulty(FaultPlan::Nth(k));
        let failed = scenario(&mut mm);
        assert!(
            failed <= 1,
            "one injected fault fails at most one reserve (k = {k})"
        );
        assert_nothing_left(mm);
    }
}

#[test]
fn a_storage_that_refuses_every_page_fails_each_reserve_cleanly() {
    let mut mm = faulty(FaultPlan::FromNth(1));
    for size in [0, 100, 100 * KIB, 5 * MIB] {
        assert!(matches!(
            mm.reserve(size),
            Err(mem_pools::IoError::Storage(_))
        ));
    }
    assert_eq!(mm.memory_usage(), Default::default());
    assert_nothing_left(mm);
}
