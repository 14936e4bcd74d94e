//! When memory moves: refusals while recording, the triggers (pressure,
//! out of page sizes, the stalled-shape memo), which reasons may allocate,
//! and typed errors — on real host memory through the tests' small runtime (`TestStreams`).

mod common;

use common::*;
use mem_relocate::{RelocatingStreams, RelocationError, RelocationReason, StorageCopyQueue};
use mem_storage::{ComputeStorage, HostStorage};

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

/// A stream whose pool holds all 8 page sizes (4 KiB .. 512 KiB), one
/// live slice (seed = its index) on each.
fn out_of_page_sizes() -> (
    TestStreams<HostStorage>,
    Vec<mem_pools::ManagedMemoryHandle>,
) {
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
    let mut set = TestStreams::new(mm, StorageCopyQueue);
    let mm = set.memory(0).unwrap();
    let kept: Vec<_> = [3, 5, 9, 17, 33, 65, 129, 257]
        .iter()
        .enumerate()
        .map(|(i, k)| written(mm, k * KIB, i as u64))
        .collect();
    assert!(mm.relocation_state().out_of_page_sizes);
    (set, kept)
}

#[test]
fn pools_out_of_page_sizes_relocate_before_their_next_growth_fails() {
    let (mut set, kept) = out_of_page_sizes();
    assert!(set.memory(0).unwrap().reserve(513 * KIB).is_err());
    let grown = set.reserve(0, 513 * KIB).unwrap();
    assert_eq!(
        set.log().last_reason,
        Some(RelocationReason::PoolsOutOfPageSizes)
    );
    let mm = set.memory(0).unwrap();
    for (i, h) in kept.iter().enumerate() {
        assert!(intact(mm, h, i as u64));
    }
    assert_eq!(grown.size(), 513 * KIB);
}

#[test]
fn a_reservation_that_stays_out_of_page_sizes_is_a_typed_error() {
    let (mut set, kept) = out_of_page_sizes();
    // Raw addresses keep every outdated page where it is.
    let mm = set.memory(0).unwrap();
    for h in &kept[..7] {
        mm.get_resource(h.binding(), None, None).unwrap();
    }
    let err = set.reserve(0, 513 * KIB).unwrap_err();
    assert!(
        matches!(
            err,
            RelocationError::Engine(mem_pools::IoError::PageSizesExhausted { .. })
        ),
        "{err}"
    );
    assert_eq!(set.log().moved_slices, 0);
    assert!(set.reserve(7, KIB).is_err(), "unknown stream");
    let mm = set.memory(0).unwrap();
    for h in &kept[..7] {
        mm.release_raw(h.binding()).unwrap();
    }
    assert!(set.reserve(0, 513 * KIB).is_ok());
}

#[test]
fn bad_stream_indices_are_errors_that_change_nothing() {
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
}
