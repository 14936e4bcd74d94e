//! The relocation rules, on real host memory through the reference
//! `StreamSet`.

mod common;

use std::sync::Arc;

use common::*;
use mem_pools::ManagedMemoryHandle;
use mem_relocate::{
    Planned, RelocatingStreams, RelocationError, RelocationReason, StorageCopyQueue, StreamSet,
};
use mem_storage::{
    ComputeStorage, FaultInjection, FaultPlan, HostResource, HostStorage, Operation,
    ResourceStorage,
};

/// Stream 0 holds `old` (1 KiB, seed 1) on an outdated 4 KiB page and
/// `big` (`big` bytes, seed 2) on the current 8 KiB page.
fn grown(set: &mut StreamSet<HostStorage>, big: u64) -> (ManagedMemoryHandle, ManagedMemoryHandle) {
    let mm = set.memory(0).unwrap();
    let old = written(mm, KIB, 1);
    let big = written(mm, big, 2);
    assert!(mm.has_outdated());
    (old, big)
}

#[test]
fn reclaim_is_refused_while_any_stream_records_and_nothing_moves() {
    let mut set = host_set(2);
    let (old, _big) = grown(&mut set, 5 * KIB);
    let before = place(set.memory(0).unwrap(), &old);
    set.begin_recording(1).unwrap();
    let err = set.reclaim().unwrap_err();
    assert_eq!(err, RelocationError::Recording { recording: 1 });
    set.relocate_device(RelocationReason::Capture);
    set.relocate(RelocationReason::Explicit);
    assert_eq!(set.log().attempts, 0);
    assert_eq!(place(set.memory(0).unwrap(), &old), before);
    assert!(set.end_recording(1).unwrap().is_empty());
    set.reclaim().unwrap();
    assert!(!set.memory(0).unwrap().has_outdated());
    assert!(intact(set.memory(0).unwrap(), &old, 1));
}

#[test]
fn an_unchanged_shape_is_not_replanned_after_a_relocation_that_moved_nothing() {
    let mut set = host_set(1);
    // The current 8 KiB page keeps 512 B free: no held room for `old`.
    let (old, _big) = grown(&mut set, 7 * KIB + 512);
    let allocated = set.bytes_allocated();
    set.set_capacity(Some(allocated + 8 * KIB)); // under pressure
    set.relocate_when_wanted();
    assert_eq!((set.log().attempts, set.log().stalled), (1, 1));
    assert!(set.trigger(0).unwrap().stalled_shape().is_some());
    for _ in 0..5 {
        set.relocate_when_wanted();
    }
    assert_eq!(set.log().attempts, 1, "the same shape is never replanned");
    // A growth changes the shape: the trigger plans again and `old` moves.
    let _bigger = written(set.memory(0).unwrap(), 9 * KIB, 3);
    let allocated = set.bytes_allocated();
    set.set_capacity(Some(allocated + 16 * KIB));
    set.relocate_when_wanted();
    assert_eq!(set.log().attempts, 2);
    assert!(set.log().moved_slices >= 1);
    assert!(intact(set.memory(0).unwrap(), &old, 1));
}

#[test]
fn an_explicit_relocation_never_allocates_but_a_capture_may() {
    let mut set = host_set(1);
    let (old, _big) = grown(&mut set, 7 * KIB + 512); // 512 B held room
    let allocs = set.memory(0).unwrap().stats().storage_allocs;
    let reserved = set.bytes_allocated();
    set.relocate(RelocationReason::Explicit);
    set.relocate(RelocationReason::MemoryPressure);
    assert_eq!(set.memory(0).unwrap().stats().storage_allocs, allocs);
    assert_eq!(set.bytes_allocated(), reserved);
    assert!(set.memory(0).unwrap().has_outdated());
    set.relocate(RelocationReason::Capture);
    assert_eq!(set.memory(0).unwrap().stats().storage_allocs, allocs + 1);
    assert!(!set.memory(0).unwrap().has_outdated());
    assert_eq!(set.bytes_allocated(), reserved - 4 * KIB + 8 * KIB);
    assert!(intact(set.memory(0).unwrap(), &old, 1));
}

#[test]
fn a_failed_wait_leaks_and_never_frees() {
    let fault =
        Arc::new(FaultInjection::new(HostResource::new()).counting(&[Operation::Synchronize]));
    let mut set = StreamSet::new(
        manager_on(ResourceStorage::new(fault.clone())),
        StorageCopyQueue,
    );
    let mm = set.memory(0).unwrap();
    let old = written(mm, KIB, 1);
    let _big = written(mm, 5 * KIB, 2);
    let reserved = set.bytes_allocated();
    // finish (1), the queue's wait for the device (2), its wait for the copies (3).
    fault.reset_count();
    fault.set_plan(FaultPlan::Nth(3));
    set.relocate(RelocationReason::Explicit);
    assert_eq!(fault.injected(), 1);
    fault.disarm();
    let log = set.log().clone();
    assert_eq!((log.failures, log.leaked_bytes), (1, 2 * KIB));
    assert!(matches!(
        log.last_error,
        Some(RelocationError::Wait { moves: 1, leaked_bytes, .. }) if leaked_bytes == 2 * KIB
    ));
    assert_eq!(set.bytes_allocated(), reserved, "nothing was freed");
    assert!(intact(set.memory(0).unwrap(), &old, 1));
    drop(old);
    set.reclaim().unwrap();
    assert_eq!(
        set.bytes_allocated(),
        reserved,
        "leaked pages are never freed"
    );
    assert!(set.memory(0).unwrap().has_outdated());
}

#[test]
fn a_dropped_plan_or_dropped_copies_lose_nothing() {
    let mut mm = manager();
    let old = written(&mut mm, KIB, 1);
    let _big = written(&mut mm, 5 * KIB, 2);
    let before = place(&mut mm, &old);
    let planned = Planned::new(&mut mm, RelocationReason::Capture);
    assert_eq!((planned.moves(), planned.pages()), (1, 1));
    drop(planned);
    assert_eq!(place(&mut mm, &old), before);
    let copied = Planned::new(&mut mm, RelocationReason::Capture)
        .copy(&mut StorageCopyQueue)
        .unwrap();
    assert_eq!(copied.moves(), 1);
    drop(copied);
    assert_eq!(place(&mut mm, &old), before);
    assert!(intact(&mut mm, &old, 1));
    assert!(mm.has_outdated());
    assert_eq!(mm.memory_usage().number_allocs, 2);
    let outcome = Planned::new(&mut mm, RelocationReason::Capture)
        .copy(&mut StorageCopyQueue)
        .unwrap()
        .commit()
        .unwrap();
    assert_eq!((outcome.moved_slices, outcome.pages_freed), (1, 1));
    assert!(intact(&mut mm, &old, 1));
}

#[test]
fn pinned_pages_and_pages_with_a_raw_address_out_never_move() {
    let mut set = host_set(1);
    let mm = set.memory(0).unwrap();
    let a = written(mm, KIB, 1); // 4 KiB page
    let b = written(mm, 5 * KIB, 2); // 8 KiB page
    let c = written(mm, 9 * KIB, 3); // 16 KiB page
    let _d = written(mm, 17 * KIB, 4); // 32 KiB page, current
    // A graph pins `a`'s slice: the recording binds it to a handle of its own.
    set.begin_recording(0).unwrap();
    let mm = set.memory(0).unwrap();
    let graph_buffer = mm.reserve(KIB).unwrap();
    mm.bind(a, graph_buffer.clone(), 7).unwrap();
    let pins = set.end_recording(0).unwrap();
    assert!(!pins.is_empty());
    let mm = set.memory(0).unwrap();
    let _raw = mm.get_resource(b.binding(), None, None).unwrap();
    let (a_at, b_at, c_at) = (place(mm, &graph_buffer), place(mm, &b), place(mm, &c));
    set.relocate(RelocationReason::Capture);
    let mm = set.memory(0).unwrap();
    assert_eq!(place(mm, &graph_buffer), a_at);
    assert_eq!(place(mm, &b), b_at);
    assert_ne!(place(mm, &c), c_at, "the unpinned page moved");
    assert!(intact(mm, &graph_buffer, 1));
    assert!(intact(mm, &b, 2));
    assert!(intact(mm, &c, 3));
    assert_eq!(mm.relocation_state().shape.outdated_pages, 2);
    // A pin lasts while its slice lives; a raw address until released.
    drop((pins, graph_buffer));
    mm.release_raw(b.binding()).unwrap();
    set.relocate(RelocationReason::Capture);
    let mm = set.memory(0).unwrap();
    assert!(!mm.has_outdated());
    assert_ne!(place(mm, &b), b_at);
    assert!(intact(mm, &b, 2));
}

#[test]
fn a_page_moves_all_or_nothing() {
    let mut set = host_set(1);
    let mm = set.memory(0).unwrap();
    let a1 = written(mm, KIB, 1);
    let a2 = written(mm, KIB, 2);
    let big = written(mm, 7 * KIB, 3); // the 8 KiB page keeps room for one of them
    let (p1, p2) = (place(mm, &a1), place(mm, &a2));
    set.relocate(RelocationReason::Explicit);
    let mm = set.memory(0).unwrap();
    assert_eq!((place(mm, &a1), place(mm, &a2)), (p1, p2));
    assert_eq!(set.log().moved_slices, 0);
    drop(big);
    set.relocate(RelocationReason::Explicit);
    let mm = set.memory(0).unwrap();
    assert_ne!(place(mm, &a1).0, p1.0);
    assert_eq!(place(mm, &a1).0, place(mm, &a2).0);
    assert!(intact(mm, &a1, 1) && intact(mm, &a2, 2));
    assert_eq!(set.log().pages_freed, 1);
}

#[test]
fn reclaim_leaves_reserved_equal_to_the_pages_live_data_needs() {
    let mut set = host_set(1);
    let (old, big) = grown(&mut set, 5 * KIB);
    // An empty current page: reserved, needed by nothing.
    drop(written(set.memory(0).unwrap(), 8 * KIB, 9));
    assert_eq!(set.bytes_allocated(), 4 * KIB + 2 * 8 * KIB);
    set.reclaim().unwrap();
    assert_eq!(set.bytes_allocated(), 8 * KIB);
    let mm = set.memory(0).unwrap();
    assert_eq!(mm.memory_usage().bytes_reserved, 8 * KIB);
    assert_eq!(place(mm, &old).0, place(mm, &big).0);
    assert!(intact(mm, &old, 1) && intact(mm, &big, 2));
}

#[test]
fn relocate_device_empties_every_streams_outdated_pages() {
    let mut set = host_set(3);
    let mut kept = Vec::new();
    for stream in [0, 2] {
        let mm = set.memory(stream).unwrap();
        kept.push((stream, written(mm, KIB, stream as u64)));
        kept.push((stream, written(mm, 5 * KIB, 10 + stream as u64)));
    }
    let sum: u64 = (0..3)
        .map(|i| set.memory(i).unwrap().storage().bytes_allocated())
        .sum();
    assert_eq!(set.bytes_allocated(), sum);
    assert!(!set.has_outdated() || set.relocating() == 0);
    set.set_relocating(1).unwrap();
    assert!(!set.has_outdated() && set.device_has_outdated());
    set.relocate(RelocationReason::Capture);
    assert_eq!(set.log().attempts, 0, "stream 1 has nothing outdated");
    set.relocate_device(RelocationReason::Capture);
    assert!(!set.device_has_outdated());
    assert_eq!(set.log().attempts, 2);
    for (stream, handle) in &kept {
        let seed = if handle.size() == KIB {
            *stream as u64
        } else {
            10 + *stream as u64
        };
        assert!(intact(set.memory(*stream).unwrap(), handle, seed));
    }
}

#[test]
fn memory_pressure_relocates_only_when_the_next_page_would_leave_less_than_a_page_free() {
    let mut set = host_set(2);
    let (old, _big) = grown(&mut set, 5 * KIB);
    let _other = written(set.memory(1).unwrap(), 3 * KIB, 5);
    let allocated = set.bytes_allocated(); // both streams: 4 + 8 + 4 KiB
    assert_eq!(allocated, 16 * KIB);
    // Next page 8 KiB: relocate once allocated + 8 KiB > capacity − 8 KiB.
    set.set_capacity(Some(allocated + 16 * KIB));
    set.relocate_when_wanted();
    assert_eq!(set.log().attempts, 0);
    set.set_capacity(Some(allocated + 16 * KIB - 1));
    set.relocate_when_wanted();
    assert_eq!(set.log().attempts, 1);
    assert_eq!(
        set.log().last_reason,
        Some(RelocationReason::MemoryPressure)
    );
    assert!(!set.memory(0).unwrap().has_outdated());
    assert!(intact(set.memory(0).unwrap(), &old, 1));
}

#[test]
fn pools_out_of_page_sizes_relocate_before_their_next_growth_fails() {
    let wide = mem_pools::MemoryDeviceProperties {
        max_page_size: 1024 * KIB,
        alignment: 256,
    };
    let config = mem_pools::MemoryConfiguration::Custom {
        pool_options: vec![mem_pools::MemoryPoolOptions {
            pool_type: mem_pools::PoolType::SlicedPages {
                page_size: 4 * KIB,
                max_slice_size: 1024 * KIB,
            },
            dealloc_period: None,
        }],
    };
    let mm = mem_pools::MemoryManagement::from_configuration(
        HostStorage::host(),
        &wide,
        config,
        Default::default(),
        Default::default(),
    );
    let mut set = StreamSet::new(mm, StorageCopyQueue);
    let mm = set.memory(0).unwrap();
    let kept: Vec<_> = [3, 5, 9, 17, 33, 65, 129, 257]
        .iter()
        .enumerate()
        .map(|(i, k)| written(mm, k * KIB, i as u64))
        .collect();
    assert!(mm.reserve(513 * KIB).is_err());
    set.relocate_when_wanted();
    assert_eq!(
        set.log().last_reason,
        Some(RelocationReason::PoolsOutOfPageSizes)
    );
    let mm = set.memory(0).unwrap();
    assert!(mm.reserve(513 * KIB).is_ok());
    for (i, h) in kept.iter().enumerate() {
        assert!(intact(mm, h, i as u64));
    }
}

#[test]
fn bad_stream_indices_and_recording_twice_are_errors_that_change_nothing() {
    let mut set = host_set(2);
    assert_eq!(
        set.set_relocating(2).unwrap_err(),
        RelocationError::UnknownStream {
            stream: 2,
            streams: 2
        }
    );
    assert_eq!(set.relocating(), 0);
    assert!(set.memory(5).is_err());
    set.begin_recording(1).unwrap();
    assert_eq!(
        set.begin_recording(1).unwrap_err(),
        RelocationError::AlreadyRecording { stream: 1 }
    );
    assert_eq!(set.recording_streams(), [1]);
    assert_eq!(
        set.end_recording(0).unwrap_err(),
        RelocationError::NotRecording { stream: 0 }
    );
    assert!(set.end_recording(1).is_ok());
    assert!(!set.recording());
}
