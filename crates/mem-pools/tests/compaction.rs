//! Compaction: emptying sparse current pages into the holes of others.

mod common;

use common::*;
use mem_pools::{
    CompactionState, ManagedMemoryHandle, MemoryManagement, StorageCopyQueue, TargetRoom,
};
use mem_storage::HostStorage;

type Manager = MemoryManagement<HostStorage>;

/// Two 1 MiB pages of 256 KiB slices, each written with its own pattern;
/// page A keeps slices 0 and 1, page B keeps slice 4 only.
fn fragmented() -> (Manager, Vec<(ManagedMemoryHandle, u64)>) {
    let mut mm = manager(sliced());
    let mut all: Vec<_> = (0..8).map(|_| mm.reserve(256 * KIB).unwrap()).collect();
    for (i, h) in all.iter().enumerate() {
        mm.write(h.binding(), &pattern(i as u64, 256 * KIB as usize))
            .unwrap();
    }
    let kept = [0usize, 1, 4];
    let live = all
        .drain(..)
        .enumerate()
        .filter(|(i, _)| kept.contains(i))
        .map(|(i, h)| (h, i as u64))
        .collect();
    mm.drain_drops();
    (mm, live)
}

fn compact(mm: &mut Manager) -> mem_pools::RelocationOutcome {
    let plan = mm.plan_compaction();
    let landed = mm.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    mm.commit_relocation(landed).unwrap()
}

fn assert_intact(mm: &mut Manager, live: &[(ManagedMemoryHandle, u64)]) {
    for (h, seed) in live {
        let mut out = vec![0; 256 * KIB as usize];
        mm.read(h.binding(), &mut out).unwrap();
        assert_eq!(out, pattern(*seed, out.len()), "allocation {seed}");
    }
}

#[test]
fn a_compaction_empties_the_sparsest_current_page_into_the_holes_of_another() {
    let (mut mm, live) = fragmented();
    assert_eq!(mm.memory_usage().bytes_reserved, 2 * MIB);
    assert!(
        mm.plan_relocation(TargetRoom::MayAllocate).is_empty(),
        "no outdated page"
    );
    let plan = mm.plan_compaction();
    assert_eq!(
        (plan.moves(), plan.pages(), plan.bytes()),
        (1, 1, 256 * KIB)
    );
    let landed = mm.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    let outcome = mm.commit_relocation(landed).unwrap();
    assert_eq!((outcome.moved_slices, outcome.pages_freed), (1, 1));
    assert_eq!(mm.memory_usage().bytes_reserved, MIB);
    assert_eq!(mm.memory_usage().pages, 1);
    assert_intact(&mut mm, &live);
    let views: Vec<_> = live
        .iter()
        .map(|(h, _)| mm.get_storage(h.binding()).unwrap().id)
        .collect();
    assert!(views.iter().all(|&id| id == views[0]), "all on one page");
}

#[test]
fn a_compaction_never_allocates_and_leaves_out_a_page_whose_slices_do_not_all_fit() {
    let mut mm = manager(sliced());
    let mut all: Vec<_> = (0..8).map(|_| mm.reserve(256 * KIB).unwrap()).collect();
    // Page A keeps 2 slices (2 holes), page B keeps 3 (1 hole): neither
    // page's slices all fit in the other's holes.
    all.remove(7);
    all.remove(3);
    all.remove(2);
    mm.drain_drops();
    let (usage, allocs) = (mm.memory_usage(), mm.stats().storage_allocs);
    let plan = mm.plan_compaction();
    assert!(plan.is_empty(), "{plan:?}");
    assert_eq!(
        mm.memory_usage().bytes_in_use,
        usage.bytes_in_use,
        "targets freed"
    );
    let landed = mm.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    assert_eq!(mm.commit_relocation(landed).unwrap().moved_slices, 0);
    assert_eq!(mm.memory_usage(), usage);
    assert_eq!(mm.stats().storage_allocs, allocs);
    drop(all);
}

#[test]
fn a_raw_out_page_never_moves_but_sparser_pages_pack_into_its_holes() {
    let (mut mm, live) = fragmented();
    let raw = &live[2].0; // the only slice of page B
    mm.get_resource(raw.binding(), None, None).unwrap();
    let raw_view = mm.get_storage(raw.binding()).unwrap();
    let outcome = compact(&mut mm);
    assert_eq!((outcome.moved_slices, outcome.pages_freed), (2, 1));
    assert_eq!(mm.get_storage(raw.binding()).unwrap(), raw_view);
    assert_eq!(mm.memory_usage().bytes_reserved, MIB);
    assert_intact(&mut mm, &live);
}

#[test]
fn a_dropped_compaction_plan_loses_nothing() {
    let (mut mm, live) = fragmented();
    let usage = mm.memory_usage();
    let views: Vec<_> = live
        .iter()
        .map(|(h, _)| mm.get_storage(h.binding()).unwrap())
        .collect();
    let plan = mm.plan_compaction();
    assert!(!plan.is_empty());
    drop(plan);
    mm.drain_drops();
    assert_eq!(mm.memory_usage(), usage);
    for ((h, _), view) in live.iter().zip(&views) {
        assert_eq!(mm.get_storage(h.binding()).unwrap(), *view);
    }
    assert_intact(&mut mm, &live);
    assert_eq!(
        compact(&mut mm).pages_freed,
        1,
        "the page can still be emptied"
    );
}

#[test]
fn a_page_that_gains_a_raw_address_after_planning_is_neither_moved_nor_freed() {
    let (mut mm, live) = fragmented();
    let plan = mm.plan_compaction();
    let landed = mm.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    mm.get_resource(live[2].0.binding(), None, None).unwrap();
    let outcome = mm.commit_relocation(landed).unwrap();
    assert_eq!((outcome.moved_slices, outcome.pages_freed), (0, 0));
    assert_eq!(mm.memory_usage().bytes_reserved, 2 * MIB);
    assert_intact(&mut mm, &live);
}

#[test]
fn the_compaction_state_counts_holes_in_current_pages_and_the_pages_they_could_free() {
    let (mut mm, live) = fragmented();
    assert_eq!(
        mm.compaction_state(),
        CompactionState {
            current_live_bytes: 768 * KIB,
            current_free_bytes: 1280 * KIB,
            current_pages_with_live_data: 2,
            compactable_pages: 1,
        }
    );
    compact(&mut mm);
    assert_eq!(
        mm.compaction_state(),
        CompactionState {
            current_live_bytes: 768 * KIB,
            current_free_bytes: 256 * KIB,
            current_pages_with_live_data: 1,
            compactable_pages: 0,
        }
    );
    drop(live);
}

#[test]
fn nothing_is_compacted_during_a_capture() {
    let (mut mm, _live) = fragmented();
    mm.capture_begin();
    assert!(mm.plan_compaction().is_empty());
    drop(mm.capture_end());
    assert_eq!(mm.plan_compaction().pages(), 1);
}

#[test]
fn a_chosen_page_that_gains_an_allocation_before_the_commit_is_kept_and_nothing_is_lost() {
    let (mut mm, mut live) = fragmented();
    let plan = mm.plan_compaction();
    assert_eq!(plan.pages(), 1);
    // Page B's three holes are back in the index (page A has one left, the
    // other holds the target): four reservations fill both pages, so the
    // chosen page B gains allocations.
    for seed in 10..14 {
        let h = mm.reserve(256 * KIB).unwrap();
        mm.write(h.binding(), &pattern(seed, 256 * KIB as usize))
            .unwrap();
        live.push((h, seed));
    }
    let landed = mm.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    let outcome = mm.commit_relocation(landed).unwrap();
    assert_eq!((outcome.moved_slices, outcome.pages_freed), (1, 0));
    assert_eq!(mm.memory_usage().bytes_reserved, 2 * MIB);
    assert_intact(&mut mm, &live);
}
