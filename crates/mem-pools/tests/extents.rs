//! Re-claiming a known extent, and aborting a capture.

mod common;

use common::*;
use mem_pools::{CaptureState, MemoryAllocationMode, MemoryConfiguration, TargetRoom};
use mem_storage::{StorageHandle, StorageId, StorageUtilization};

#[test]
fn a_freed_persistent_extent_is_reclaimed_exactly_as_the_only_pin_handle() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.mode(MemoryAllocationMode::Persistent);
    let others: Vec<_> = (0..3).map(|_| mm.reserve(3000).unwrap()).collect();
    let lent = mm.reserve(3000).unwrap();
    mm.mode(MemoryAllocationMode::Auto);
    let view = mm.get_storage(lent.binding()).unwrap();
    drop(lent);
    mm.drain_drops();
    let allocs = mm.stats().storage_allocs;
    let pin = mm.reclaim_extent(&view).expect("the extent is free");
    assert!(pin.is_pin() && pin.can_mut());
    assert_eq!(pin.size(), 3000);
    assert_eq!(mm.get_storage(pin.binding()).unwrap(), view);
    assert_eq!(mm.stats().storage_allocs, allocs, "no new page");
    assert_eq!(mm.memory_usage().number_allocs, 4);
    drop(pin);
    mm.drain_drops();
    assert_eq!(mm.memory_usage().number_allocs, 3, "freed with its pin");
    drop(others);
}

#[test]
fn a_live_unknown_or_released_extent_is_not_reclaimed_and_nothing_changes() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.mode(MemoryAllocationMode::Persistent);
    let live = mm.reserve(512).unwrap();
    let view = mm.get_storage(live.binding()).unwrap();
    let usage = mm.memory_usage();
    assert!(mm.reclaim_extent(&view).is_none(), "live");
    let unknown = StorageHandle {
        id: StorageId(u64::MAX),
        utilization: StorageUtilization {
            offset: 0,
            size: 512,
        },
    };
    assert!(mm.reclaim_extent(&unknown).is_none(), "unknown page");
    assert_eq!(mm.memory_usage(), usage);
    drop(live);
    mm.cleanup(true);
    assert_eq!(mm.memory_usage().bytes_reserved, 0);
    assert!(mm.reclaim_extent(&view).is_none(), "released page");
}

#[test]
fn a_free_extent_inside_a_sliced_page_is_cut_out_at_its_offset() {
    let mut mm = manager(sliced());
    let a = mm.reserve(4 * KIB).unwrap();
    let b = mm.reserve(4 * KIB).unwrap();
    let c = mm.reserve(4 * KIB).unwrap();
    let view = mm.get_storage(b.binding()).unwrap();
    drop((a, b));
    mm.drain_drops();
    let pin = mm.reclaim_extent(&view).expect("free and indexed");
    assert_eq!(mm.get_storage(pin.binding()).unwrap(), view);
    let next = mm.reserve(4 * KIB).unwrap();
    assert_ne!(
        mm.get_storage(next.binding()).unwrap().offset(),
        view.offset()
    );
    drop(c);
}

#[test]
fn a_reclaimed_extent_does_not_move_while_its_pin_handle_lives() {
    let mut mm = manager(growable());
    let kept = mm.reserve(10 * KIB).unwrap();
    let view = mm.get_storage(kept.binding()).unwrap();
    drop(kept);
    let pin = mm.reclaim_extent(&view).expect("free");
    let data = pattern(2, 10 * KIB as usize);
    mm.write(pin.binding(), &data).unwrap();
    let _big = mm.reserve(100 * KIB).unwrap(); // the 64 KiB page goes outdated
    assert_eq!(mm.relocation_state().shape.outdated_pinned, 1);
    assert!(mm.plan_relocation(TargetRoom::MayAllocate).is_empty());
    let clone = pin.clone();
    drop(pin);
    assert!(mm.plan_relocation(TargetRoom::MayAllocate).is_empty());
    let mut out = vec![0; data.len()];
    mm.read(clone.binding(), &mut out).unwrap();
    assert_eq!(
        (out, mm.get_storage(clone.binding()).unwrap()),
        (data, view)
    );
    drop(clone);
    mm.drain_drops();
    assert!(!mm.has_outdated(), "the last pin freed it and its page");
}

#[test]
fn capture_abort_restores_the_mode_and_reclaims_or_pins_nothing() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.mode(MemoryAllocationMode::Persistent);
    mm.capture_begin();
    let kept = mm.reserve(1000).unwrap();
    drop(mm.reserve(2000).unwrap());
    assert!(!kept.can_mut(), "priming retains a clone");
    mm.capture_abort();
    assert_eq!(mm.capture_state(), CaptureState::default());
    assert_eq!(mm.effective_mode(), MemoryAllocationMode::Persistent);
    mm.mode(MemoryAllocationMode::Auto);
    assert_eq!(mm.effective_mode(), MemoryAllocationMode::Auto);
    assert!(kept.can_mut(), "no pin handle, no priming clone");
    assert_eq!(
        mm.memory_usage().number_allocs,
        1,
        "the freed extent stays free"
    );
    mm.capture_abort();
    assert_eq!(mm.memory_usage().number_allocs, 1);
}

#[test]
fn every_freed_extent_of_a_page_with_many_slices_is_reclaimed_after_coalescing() {
    let mut mm = manager(sliced());
    let held: Vec<_> = (0..200).map(|_| mm.reserve(1000).unwrap()).collect();
    let views: Vec<_> = held
        .iter()
        .map(|h| mm.get_storage(h.binding()).unwrap())
        .collect();
    assert!(views.iter().all(|v| v.id == views[0].id), "one page");
    // Free every other run of three: the runs coalesce into bigger free slices.
    let mut kept = Vec::new();
    let mut freed = Vec::new();
    for (i, h) in held.into_iter().enumerate() {
        if (i / 3) % 2 == 1 {
            freed.push(i);
        } else {
            kept.push(h);
        }
    }
    mm.drain_drops();
    let pins: Vec<_> = freed
        .iter()
        .rev()
        .map(|&i| mm.reclaim_extent(&views[i]).expect("free"))
        .collect();
    for (pin, &i) in pins.iter().zip(freed.iter().rev()) {
        assert_eq!(mm.get_storage(pin.binding()).unwrap(), views[i]);
    }
    assert!(mm.reclaim_extent(&views[0]).is_none(), "live");
    drop(kept);
}

#[test]
fn an_extent_at_an_unaligned_offset_is_never_carved() {
    let mut mm = manager(sliced());
    let h = mm.reserve(4096).unwrap();
    let view = mm.get_storage(h.binding()).unwrap();
    drop(h);
    mm.drain_drops();
    let usage = mm.memory_usage();
    let odd = StorageHandle {
        id: view.id,
        utilization: StorageUtilization {
            offset: view.offset() + 100,
            size: 512,
        },
    };
    assert!(mm.reclaim_extent(&odd).is_none());
    assert_eq!(mm.memory_usage(), usage);
    assert!(mm.reclaim_extent(&view).is_some(), "the aligned extent is");
}

#[test]
fn the_free_bytes_in_front_of_a_reclaimed_extent_serve_the_next_reservation() {
    let mut mm = manager(sliced());
    let run: Vec<_> = (0..3).map(|_| mm.reserve(1024).unwrap()).collect();
    let _after = mm.reserve(1024).unwrap();
    let views: Vec<_> = run
        .iter()
        .map(|h| mm.get_storage(h.binding()).unwrap())
        .collect();
    drop(run);
    mm.drain_drops();
    let _last = mm.reclaim_extent(&views[2]).expect("free");
    let front = mm.reserve(2048).unwrap();
    assert_eq!(
        mm.get_storage(front.binding()).unwrap().offset(),
        views[0].offset(),
        "the 2 KiB in front of the reclaimed extent are indexed again"
    );
}
