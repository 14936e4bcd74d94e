//! Relocation and reclaim across a device's streams.

mod common;

use common::*;
use gpumem::prelude::*;

fn growable_device(streams: usize) -> Device {
    Device::host()
        .pools(growable())
        .streams(streams)
        .ignore_env()
        .build()
        .unwrap()
}

/// Leave a 10 KiB live slice on an outdated 64 KiB page of `s`.
fn outdated(s: &Stream, seed: u64) -> (ManagedMemoryHandle, ManagedMemoryHandle) {
    let old = s.reserve(10 * KIB).unwrap();
    s.write(&old, &pattern(seed, 10 * KIB as usize)).unwrap();
    let big = s.reserve(100 * KIB).unwrap(); // pages grow to 128 KiB
    assert!(s.with_memory(|mm| mm.has_outdated()));
    (old, big)
}

#[test]
fn relocation_moves_every_streams_outdated_data_and_keeps_its_bytes() {
    let device = growable_device(2);
    let (s0, s1) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let (old0, _big0) = outdated(&s0, 1);
    let (old1, _big1) = outdated(&s1, 2);
    s0.submit();
    let summary = device.relocate(RelocationReason::Explicit).unwrap();
    assert_eq!(summary.moved_slices, 2);
    assert_eq!(summary.moved_bytes, 20 * KIB);
    assert_eq!((summary.pages_freed, summary.bytes_freed), (2, 128 * KIB));
    assert_eq!(
        read(&s0, &old0, 10 * KIB as usize),
        pattern(1, 10 * KIB as usize)
    );
    assert_eq!(
        read(&s1, &old1, 10 * KIB as usize),
        pattern(2, 10 * KIB as usize)
    );
    assert_eq!(
        s0.completed(),
        1,
        "every stream's work finished before moving"
    );
}

#[test]
fn an_explicit_relocation_never_raises_reserved_memory_but_out_of_page_sizes_may() {
    let device = growable_device(1);
    let s = device.default_stream();
    let (_old, big) = outdated(&s, 3);
    let filler = s.reserve(28 * KIB).unwrap(); // the 128 KiB page is now full
    let before = device.stats().reserved_bytes.current;
    let summary = device.relocate(RelocationReason::Explicit).unwrap();
    assert_eq!(summary.moved_slices, 0, "no room held, nothing moves");
    assert_eq!(device.stats().reserved_bytes.current, before);
    let summary = device
        .relocate(RelocationReason::PoolsOutOfPageSizes)
        .unwrap();
    assert_eq!(summary.moved_slices, 1);
    drop((big, filler));
}

#[test]
fn reclaim_gives_back_every_page_that_holds_nothing() {
    let device = growable_device(2);
    let s = device.stream(1).unwrap();
    let (old, big) = outdated(&s, 4);
    drop(big);
    let summary = device.reclaim().unwrap();
    assert_eq!(summary.moved_slices, 1);
    assert_eq!(
        device.stats().reserved_bytes.current,
        128 * KIB,
        "only the page holding the live slice remains"
    );
    assert_eq!(
        read(&s, &old, 10 * KIB as usize),
        pattern(4, 10 * KIB as usize)
    );
}

#[test]
fn nothing_moves_while_any_stream_records() {
    let device = growable_device(2);
    let (s0, s1) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let warmup = s1.begin_capture().unwrap(); // marks stream 1 recording
    let (_old, _big) = outdated(&s0, 5);
    let err = device.relocate(RelocationReason::Explicit).unwrap_err();
    assert!(
        matches!(err, GpuMemError::Recording { stream: 1, .. }),
        "{err}"
    );
    assert!(s0.reclaim().is_err());
    assert!(s0.with_memory(|mm| mm.has_outdated()), "nothing moved");
    drop(s0.reserve(2 * MIB).unwrap()); // an exclusive page, now empty
    let reserved = device.stats().reserved_bytes.current;
    s0.cleanup();
    assert_eq!(
        device.stats().reserved_bytes.current,
        reserved,
        "no stream gives pages back while another records"
    );
    drop(warmup);
    assert_eq!(
        s0.relocate(RelocationReason::Explicit)
            .unwrap()
            .moved_slices,
        1
    );
}

fn pressured(auto: bool) -> Device {
    Device::host()
        .pools(growable())
        .budget(Budget::Bytes(400 * KIB))
        .auto_relocate(auto)
        .ignore_env()
        .build()
        .unwrap()
}

#[test]
fn automatic_relocation_moves_outdated_data_when_the_device_runs_short() {
    let device = pressured(true);
    let s = device.default_stream();
    let (old, _big) = outdated(&s, 6);
    let _small = s.reserve(KIB).unwrap(); // the trigger fires before this
    assert!(!s.with_memory(|mm| mm.has_outdated()));
    assert_eq!(
        read(&s, &old, 10 * KIB as usize),
        pattern(6, 10 * KIB as usize)
    );
}

#[test]
fn without_automatic_relocation_outdated_pages_stay_until_asked() {
    let device = pressured(false);
    let s = device.default_stream();
    let (_old, _big) = outdated(&s, 7);
    let _small = s.reserve(KIB).unwrap();
    assert!(s.with_memory(|mm| mm.has_outdated()));
    assert_eq!(s.relocate_when_wanted().unwrap().moved_slices, 1);
}

#[test]
fn a_shape_a_relocation_could_not_change_is_not_replanned() {
    let device = pressured(false);
    let s = device.default_stream();
    let (_old, _big) = outdated(&s, 8);
    let filler = s.reserve(28 * KIB).unwrap(); // no held room left
    assert_eq!(s.relocate_when_wanted().unwrap().moved_slices, 0);
    drop(filler); // room again, but the pools' shape is the one that stalled
    assert_eq!(
        s.relocate_when_wanted().unwrap().moved_slices,
        0,
        "not replanned"
    );
    assert!(s.with_memory(|mm| mm.has_outdated()));
    let explicit = s.relocate(RelocationReason::Explicit).unwrap();
    assert_eq!(explicit.moved_slices, 1, "an explicit relocation still can");
}

#[test]
fn a_pool_out_of_page_sizes_is_relocated_and_the_reservation_retried() {
    let device = Device::host()
        .pools(PoolLayout::Sliced {
            page_size: KIB,
            max_slice: MIB,
        })
        .ignore_env()
        .build()
        .unwrap();
    let s = device.default_stream();
    // Each reservation doubles the page size and leaves a live slice behind
    // on the page before: eight page sizes alive, the most a pool may hold.
    let sizes = [
        512,
        1536,
        3 * KIB,
        6 * KIB,
        12 * KIB,
        24 * KIB,
        48 * KIB,
        96 * KIB,
    ];
    let live: Vec<_> = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            let h = s.reserve(size).unwrap();
            s.write(&h, &pattern(i as u64, 512)).unwrap();
            h
        })
        .collect();
    assert!(s.with_memory(|mm| mm.relocation_state().out_of_page_sizes));
    let next = s.reserve(192 * KIB).expect("relocated, then served");
    let state = s.with_memory(|mm| mm.relocation_state());
    assert!(!state.out_of_page_sizes);
    assert_eq!(
        device.stats().reserved_bytes.current,
        2 * 128 * KIB + 256 * KIB,
        "the small pages are gone: two 128 KiB pages (one allocated for targets) and the new 256 KiB one"
    );
    assert_eq!(state.shape.outdated_pages, 2);
    for (i, h) in live.iter().enumerate() {
        assert_eq!(read(&s, h, 512), pattern(i as u64, 512), "moved intact");
    }
    assert_eq!(
        device.stats().num_alloc_retries,
        0,
        "not an out-of-memory retry"
    );
    drop(next);
}

#[test]
fn a_reclaim_compacts_sparse_current_pages_and_keeps_their_bytes() {
    let device = growable_device(1);
    let s = device.default_stream();
    let all: Vec<_> = (0..16u64)
        .map(|seed| {
            let h = s.reserve(16 * KIB).unwrap();
            s.write(&h, &pattern(seed, 16 * KIB as usize)).unwrap();
            (h, seed)
        })
        .collect();
    let kept: Vec<_> = all.into_iter().filter(|(_, seed)| seed % 4 == 0).collect();
    s.cleanup();
    assert!(!s.with_memory(|mm| mm.has_outdated()), "nothing outdated");
    let before = device.stats().reserved_bytes.current;
    let allocs = device.stats().storage_allocs;
    let summary = s.reclaim().unwrap();
    assert!(
        summary.moved_slices > 0 && summary.pages_freed > 0,
        "{summary:?}"
    );
    let after = device.stats().reserved_bytes.current;
    assert!(after < before, "reserved {before} -> {after}");
    assert_eq!(device.stats().storage_allocs, allocs, "nothing allocated");
    for (h, seed) in &kept {
        assert_eq!(
            read(&s, h, 16 * KIB as usize),
            pattern(*seed, 16 * KIB as usize)
        );
    }
}
