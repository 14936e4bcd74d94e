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
    let summary = device.relocate(TargetRoom::Held).unwrap();
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
fn a_held_room_relocation_never_raises_reserved_memory() {
    let device = growable_device(1);
    let s = device.default_stream();
    let (_old, big) = outdated(&s, 3);
    let filler = s.reserve(28 * KIB).unwrap(); // the 128 KiB page is now full
    let before = device.stats().reserved_bytes.current;
    let summary = device.relocate(TargetRoom::Held).unwrap();
    assert_eq!(summary.moved_slices, 0, "no room held, nothing moves");
    assert_eq!(device.stats().reserved_bytes.current, before);
    let summary = device.relocate(TargetRoom::MayAllocate).unwrap();
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
    let warmup = s1.begin_capture().unwrap();
    let (_old, _big) = outdated(&s0, 5);
    let err = device.relocate(TargetRoom::Held).unwrap_err();
    assert!(
        matches!(err, GpuMemError::Recording { stream: 1, .. }),
        "{err}"
    );
    assert!(s0.reclaim().is_err());
    assert!(s0.with_memory(|mm| mm.has_outdated()), "nothing moved");
    drop(warmup);
    assert_eq!(s0.relocate(TargetRoom::Held).unwrap().moved_slices, 1);
}
