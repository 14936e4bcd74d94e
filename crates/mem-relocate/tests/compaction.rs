//! Compaction through the tests' small runtime (`TestStreams`): sparse current pages are
//! emptied into held room by a reclaim and under memory pressure, every
//! byte kept, reserved memory never raised — on real host memory.

mod common;

use common::*;
use std::sync::Arc;

use mem_pools::ManagedMemoryHandle;
use mem_relocate::{RelocatingStreams, RelocationReason, StorageCopyQueue};
use mem_storage::{ComputeStorage, FaultInjection, HostResource, Operation, ResourceStorage};

/// Sixteen written 1 KiB slices on 4 KiB pages, then every slice but one
/// per four dropped: pages a quarter full, nothing outdated.
fn sparse<S: ComputeStorage>(set: &mut TestStreams<S>) -> Vec<(ManagedMemoryHandle, u64)> {
    let mm = set.memory(0).unwrap();
    let all: Vec<_> = (0..16).map(|seed| (written(mm, KIB, seed), seed)).collect();
    let kept: Vec<_> = all.into_iter().filter(|(_, seed)| seed % 4 == 0).collect();
    let mm = set.memory(0).unwrap();
    mm.cleanup(true);
    assert!(!mm.has_outdated(), "the scenario has nothing outdated");
    let state = mm.compaction_state();
    assert!(
        state.compactable_pages >= 1,
        "holes worth a page: {state:?}"
    );
    kept
}

fn all_intact<S: ComputeStorage>(set: &mut TestStreams<S>, kept: &[(ManagedMemoryHandle, u64)]) {
    let mm = set.memory(0).unwrap();
    for (handle, seed) in kept {
        assert!(intact(mm, handle, *seed), "slice {seed} kept its bytes");
    }
}

#[test]
fn a_reclaim_with_nothing_outdated_empties_sparse_pages_and_keeps_every_byte() {
    let mut set = host_set(1);
    let kept = sparse(&mut set);
    let before = set.bytes_allocated();
    let allocs = set.memory(0).unwrap().stats().storage_allocs;
    set.reclaim().unwrap();
    all_intact(&mut set, &kept);
    let mm = set.memory(0).unwrap();
    assert_eq!(mm.stats().storage_allocs, allocs, "no page was allocated");
    let usage = mm.memory_usage();
    assert_eq!(usage.pages, usage.pages_with_live_data);
    let after = set.bytes_allocated();
    assert!(after < before, "reserved {before} -> {after}");
    let log = set.log();
    assert_eq!(log.compactions, 1);
    assert_eq!(log.compacted_bytes_freed, before - after);
    assert_eq!(log.attempts, 0, "no outdated relocation was attempted");
}

#[test]
fn explicit_and_pressure_relocations_compact_without_raising_reserved_bytes() {
    for reason in [RelocationReason::Explicit, RelocationReason::MemoryPressure] {
        let mut set = host_set(1);
        let kept = sparse(&mut set);
        let before = set.bytes_allocated();
        let allocs = set.memory(0).unwrap().stats().storage_allocs;
        set.finish();
        set.relocate_memory(reason);
        all_intact(&mut set, &kept);
        assert_eq!(
            set.memory(0).unwrap().stats().storage_allocs,
            allocs,
            "{reason}"
        );
        assert!(set.bytes_allocated() < before, "{reason} gave pages back");
        assert_eq!(set.log().compactions, 1, "{reason}");
    }
}

#[test]
fn reasons_that_may_allocate_do_not_compact() {
    for reason in [
        RelocationReason::PoolsOutOfPageSizes,
        RelocationReason::Capture,
    ] {
        let mut set = host_set(1);
        let _kept = sparse(&mut set);
        let before = set.bytes_allocated();
        set.relocate_memory(reason);
        assert_eq!(set.bytes_allocated(), before, "{reason}");
        assert_eq!(set.log().compacted_slices, 0, "{reason}");
    }
}

#[test]
fn pressure_compacts_before_a_reservation_and_a_settled_layout_is_not_replanned() {
    let fault =
        Arc::new(FaultInjection::new(HostResource::new()).counting(&[Operation::Synchronize]));
    let mut set = TestStreams::new(
        manager_on(ResourceStorage::new(fault.clone())),
        StorageCopyQueue,
    );
    let kept = sparse(&mut set);
    let before = set.bytes_allocated();
    // A device with barely more than what is held: the next page would
    // leave less than a page to spare.
    set.set_capacity(Some(before + 4 * KIB));
    let extra = set.reserve(0, KIB).unwrap();
    assert_eq!(set.log().compactions, 1, "pressure compacted");
    assert!(set.bytes_allocated() < before);
    all_intact(&mut set, &kept);
    assert!(set.trigger(0).unwrap().settled_compaction().is_some());
    // The layout is now dense: further reservations wait on nothing.
    fault.reset_count();
    let more = set.reserve(0, KIB).unwrap();
    assert_eq!(fault.calls(), 0, "no finish, no copy-queue wait");
    assert_eq!(set.log().compactions, 1);
    drop((extra, more));
}

#[test]
fn nothing_is_compacted_while_a_stream_records() {
    let mut set = host_set(2);
    let _kept = sparse(&mut set);
    let before = set.bytes_allocated();
    set.begin_recording(1).unwrap();
    set.cleanup_memory();
    set.relocate(RelocationReason::Explicit);
    assert!(set.reclaim().is_err());
    assert_eq!(set.bytes_allocated(), before);
    assert_eq!(set.log().compacted_slices, 0);
    set.end_recording(1).unwrap();
    set.reclaim().unwrap();
    assert!(set.bytes_allocated() < before);
}

#[test]
fn a_device_wide_pressure_relocation_compacts_streams_with_nothing_outdated_too() {
    let mut set = host_set(2);
    let kept = sparse(&mut set);
    // Stream 1 grows past its first page: an outdated page holds a live slice.
    let mm = set.memory(1).unwrap();
    let (old, big) = (written(mm, KIB, 1), written(mm, 6 * KIB, 2));
    assert!(mm.has_outdated());
    let sparse_pages = set.memory(0).unwrap().memory_usage().pages;
    set.relocate_device(RelocationReason::MemoryPressure);
    all_intact(&mut set, &kept);
    let usage = set.memory(0).unwrap().memory_usage();
    assert!(
        usage.pages < sparse_pages,
        "stream 0 compacted: {sparse_pages} -> {} pages",
        usage.pages
    );
    let mm = set.memory(1).unwrap();
    assert!(!mm.has_outdated(), "stream 1's outdated page was emptied");
    assert!(intact(mm, &old, 1) && intact(mm, &big, 2));
    assert_eq!((set.log().attempts, set.log().compactions), (1, 1));
}
