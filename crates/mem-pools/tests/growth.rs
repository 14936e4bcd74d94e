//! Page-size growth gives empty pages back before it allocates the grown one.

mod common;

use std::sync::Arc;

use common::*;
use mem_pools::{IoError, MemoryManagement, MemoryManagementOptions, ServerLogger};
use mem_storage::{ComputeStorage, HostResource, ResourceStorage};

/// Four 40 KiB slices, one per 64 KiB page, all dropped: 256 KiB of empty pages.
fn four_empty_pages<S: ComputeStorage>(mm: &mut MemoryManagement<S>) {
    let held: Vec<_> = (0..4).map(|_| mm.reserve(40 * KIB).unwrap()).collect();
    drop(held);
    mm.drain_drops();
    assert_eq!(mm.memory_usage().bytes_reserved, 256 * KIB);
}

#[test]
fn a_growth_never_holds_the_empty_pages_and_the_grown_page_at_once() {
    let mut mm = manager(growable());
    four_empty_pages(&mut mm);
    mm.reset_peaks();
    let big = mm.reserve(100 * KIB).unwrap(); // 64 KiB pages → 128 KiB
    assert_eq!(mm.memory_usage().bytes_reserved, 128 * KIB);
    assert_eq!(
        mm.stats().reserved_bytes.peak,
        256 * KIB,
        "the peak is the empty pages before the growth, not both at once"
    );
    assert!(!mm.has_outdated(), "nothing live was left behind");
    drop(big);
}

#[test]
fn a_growth_that_fits_the_device_only_once_empty_pages_are_back_succeeds() {
    let storage = ResourceStorage::new(HostResource::with_capacity(300 * KIB));
    let mut mm = MemoryManagement::from_configuration(
        storage,
        &props(),
        growable(),
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    four_empty_pages(&mut mm);
    // 256 KiB held + 128 KiB grown page would exceed the 300 KiB device.
    let big = mm.reserve(100 * KIB).unwrap();
    assert_eq!(mm.storage().bytes_allocated(), 128 * KIB);
    mm.write(big.binding(), &pattern(1, 100 * KIB as usize))
        .unwrap();
}

#[test]
fn a_refused_growth_keeps_the_page_size_and_the_live_pages() {
    let storage = ResourceStorage::new(HostResource::with_capacity(200 * KIB));
    let mut mm = MemoryManagement::from_configuration(
        storage,
        &props(),
        growable(),
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    let live: Vec<_> = (0..3).map(|_| mm.reserve(40 * KIB).unwrap()).collect();
    let err = mm.reserve(100 * KIB).unwrap_err();
    assert!(matches!(err, IoError::Storage(_)), "{err}");
    assert!(!mm.has_outdated());
    assert_eq!(mm.relocation_state().next_page_size, 64 * KIB);
    assert_eq!(mm.memory_usage().bytes_reserved, 192 * KIB);
    assert_eq!(mm.memory_usage().number_allocs, live.len() as u64);
}

#[test]
fn a_growth_the_device_cannot_take_even_after_the_give_back_keeps_the_empty_pages() {
    let storage = ResourceStorage::new(HostResource::with_capacity(300 * KIB));
    let mut mm = MemoryManagement::from_configuration(
        storage,
        &props(),
        growable(),
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    four_empty_pages(&mut mm);
    let before = mm.memory_usage();
    let frees = mm.stats().storage_frees;
    // 400 KiB needs a 512 KiB page: 44 KiB free + 256 KiB given back < 512 KiB.
    let err = mm.reserve(400 * KIB).unwrap_err();
    assert!(matches!(err, IoError::Storage(_)), "{err}");
    assert_eq!(
        mm.memory_usage(),
        before,
        "a refused reserve changes nothing"
    );
    assert_eq!(mm.stats().storage_frees, frees);
    assert_eq!(mm.storage().bytes_allocated(), 256 * KIB);
    let small = mm.reserve(40 * KIB).unwrap();
    assert_eq!(
        mm.stats().storage_allocs,
        4,
        "the kept pages serve again without a device call"
    );
    drop(small);
}
