//! Usage values a runtime asserts on: pages held vs pages holding live data.

mod common;

use common::*;
use mem_pools::{StorageCopyQueue, TargetRoom};

#[test]
fn pages_with_live_data_follow_every_reserve_and_free() {
    let mut mm = manager(growable());
    let a = mm.reserve(KIB).unwrap();
    let b = mm.reserve(2 * KIB).unwrap();
    let usage = mm.memory_usage();
    assert_eq!(
        (usage.pages, usage.pages_with_live_data),
        (1, 1),
        "one page"
    );
    let big = mm.reserve(4 * MIB).unwrap(); // exclusive pool
    assert_eq!(mm.memory_usage().pages_with_live_data, 2);
    drop(a);
    mm.drain_drops();
    assert_eq!(
        mm.memory_usage().pages_with_live_data,
        2,
        "b keeps its page"
    );
    drop(b);
    drop(big);
    mm.drain_drops();
    let usage = mm.memory_usage();
    assert_eq!(usage.pages_with_live_data, 0);
    assert_eq!(usage.pages, 2, "empty pages stay cached until a cleanup");
    let report = mm.memory_report();
    assert_eq!(
        report
            .pools
            .iter()
            .map(|p| p.pages_with_live_data)
            .sum::<u64>(),
        0
    );
    mm.cleanup(true);
    assert_eq!(mm.memory_usage().pages, 0);
}

#[test]
fn after_a_reclaim_every_page_held_holds_live_data() {
    let mut mm = manager(growable());
    let old = mm.reserve(10 * KIB).unwrap();
    let cached = mm.reserve(20 * KIB).unwrap();
    let big = mm.reserve(100 * KIB).unwrap(); // grows: the 64 KiB page is outdated
    drop(cached);
    mm.drain_drops();
    let usage = mm.memory_usage();
    assert_eq!((usage.pages, usage.pages_with_live_data), (2, 2));
    let plan = mm.plan_relocation(TargetRoom::Held);
    let landed = mm.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    mm.commit_relocation(landed).unwrap();
    mm.cleanup(true);
    let usage = mm.memory_usage();
    assert_eq!(usage.pages, usage.pages_with_live_data);
    assert_eq!(usage.pages, 1, "old moved next to big on the 128 KiB page");
    assert_eq!(usage.number_allocs, 2);
    drop((old, big));
}
