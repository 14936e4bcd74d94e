//! Usage values a runtime asserts on: pages held vs pages holding live data.

mod common;

use common::*;
use mem_pools::{MemoryConfiguration, StorageCopyQueue, TargetRoom};

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

#[test]
fn usage_and_reports_count_a_dropped_handle_as_freed_before_the_next_call() {
    let mut mm = manager(growable());
    let a = mm.reserve(KIB + 1).unwrap();
    let b = mm.reserve(2 * KIB).unwrap();
    let with_b_alone = {
        let mut alone = manager(growable());
        let _b = alone.reserve(2 * KIB).unwrap();
        alone.memory_usage()
    };
    drop(a);
    // No call on the engine in between: the usage alone must see the drop.
    let usage = mm.memory_usage();
    assert_eq!(
        (usage.number_allocs, usage.bytes_in_use, usage.bytes_padding),
        (1, 2 * KIB, with_b_alone.bytes_padding)
    );
    assert_eq!(mm.memory_report().pools[0].slices, 1);
    assert_eq!(mm.memory_report().usage, usage);

    drop(b);
    let usage = mm.memory_usage();
    assert_eq!((usage.number_allocs, usage.bytes_in_use), (0, 0));
    assert_eq!(
        (usage.pages, usage.pages_with_live_data),
        (1, 0),
        "the page is still held, but holds nothing live"
    );
    assert_eq!(mm.drain_drops(), 2);
    assert_eq!(
        mm.memory_usage(),
        usage,
        "the drain changes nothing reported"
    );
}

#[test]
fn a_handle_bind_retired_or_a_graphs_pin_dropping_is_not_counted_as_a_free() {
    let mut mm = manager(growable());
    let reserved = mm.reserve(KIB).unwrap();
    let assigned = mm.reserve(4 * KIB).unwrap();
    mm.bind(reserved, assigned.clone(), 1).unwrap();
    let before_drain = mm.memory_usage();
    mm.drain_drops();
    assert_eq!(mm.memory_usage(), before_drain);
    assert_eq!(
        (before_drain.number_allocs, before_drain.bytes_in_use),
        (1, KIB)
    );

    mm.capture_begin();
    let recorded = mm.reserve(KIB).unwrap();
    let pins = mm.capture_end();
    assert!(!pins.is_empty());
    let live = mm.memory_usage();
    drop(pins);
    assert_eq!(mm.memory_usage(), live, "the allocation outlives its pins");
    drop(recorded);
    // Its last holder was the dropped pin's: the drain lets that clone go
    // and frees the allocation, so usage counts it as freed already.
    let before_drain = mm.memory_usage();
    assert_eq!(before_drain.number_allocs, live.number_allocs - 1);
    mm.drain_drops();
    assert_eq!(mm.memory_usage(), before_drain);
}

/// CubeCL's `capture_end_releases_primed_slices_when_priming_never_ended`
/// (cubecl-runtime's memory management tests), against the engine itself:
/// usage read right after dropping the pin handles `capture_end` returned.
#[test]
fn capture_end_releases_primed_slices_when_priming_never_ended() {
    let mut mm = manager(MemoryConfiguration::ExclusivePages);
    mm.capture_begin();
    let scratch = mm.reserve(1024).unwrap();
    drop(scratch);
    // The caller let its handle go, but priming still retains the slice.
    assert!(
        mm.memory_usage().bytes_in_use > 0,
        "priming should still be retaining the dropped slice"
    );
    // No `capture_priming_end`: `capture_end` drops the priming clones and
    // re-claims the extent as a pin handle, which is dropped at once.
    drop(mm.capture_end());
    assert_eq!(
        mm.memory_usage().bytes_in_use,
        0,
        "primed slices outlived the capture"
    );
    assert_eq!(mm.memory_report().usage.bytes_in_use, 0);
}

#[test]
fn pool_of_names_the_pool_that_holds_an_allocation_in_report_order() {
    let mut mm = manager(growable());
    let small = mm.reserve(KIB).unwrap();
    let big = mm.reserve(4 * MIB).unwrap();
    mm.mode(mem_pools::MemoryAllocationMode::Persistent);
    let weight = mm.reserve(KIB).unwrap();
    let report = mm.memory_report();
    assert_eq!(mm.pool_of(small.binding()).unwrap(), 0);
    assert_eq!(mm.pool_of(big.binding()).unwrap(), 1);
    assert_eq!(
        mm.pool_of(weight.binding()).unwrap(),
        report.pools.len() - 1
    );
    let stale = small.binding();
    drop(small);
    mm.drain_drops();
    assert!(mm.pool_of(stale).is_err());
}

/// `SubSlices`' small pool: a few KiB of metadata slices hold one 2 MiB
/// page, not CubeCL's 8 MiB (docs/pools.md, "SubSlices"; a Burn
/// transformer's training held 6 MiB of it empty).
#[test]
fn metadata_slices_under_sub_slices_hold_a_2_mib_page() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let held: Vec<_> = [4 * KIB, 64 * KIB, 256]
        .map(|size| mm.reserve(size).unwrap())
        .into();
    let usage = mm.memory_usage();
    assert_eq!((usage.pages, usage.bytes_reserved), (1, 2 * MIB));
    drop(held);
}
