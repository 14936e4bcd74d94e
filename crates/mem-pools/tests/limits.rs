//! The device's largest page bounds every page, persistent ones included.

mod common;

use common::*;
use mem_pools::{IoError, MemoryAllocationMode, MemoryConfiguration};

#[test]
fn a_persistent_reservation_above_the_largest_page_is_too_big_and_allocates_nothing() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.mode(MemoryAllocationMode::Persistent);
    let refused = mm.reserve(props().max_page_size + 1);
    assert_eq!(
        refused.err(),
        Some(IoError::BufferTooBig {
            size: props().max_page_size + 1,
            max: props().max_page_size,
        })
    );
    assert_eq!(mm.memory_usage().bytes_reserved, 0);
    assert_eq!(mm.stats().storage_allocs, 0);
}

#[test]
fn a_persistent_reservation_of_exactly_the_largest_page_gets_a_page_of_its_size() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.mode(MemoryAllocationMode::Persistent);
    let h = mm.reserve(props().max_page_size).unwrap();
    assert_eq!(mm.memory_usage().bytes_reserved, props().max_page_size);
    drop(h);
}

#[test]
fn a_near_u64_max_persistent_reservation_is_too_big_at_the_engine_not_at_the_device() {
    for mut mm in [
        manager(MemoryConfiguration::SubSlices),
        lazy_manager(MemoryConfiguration::SubSlices),
    ] {
        mm.mode(MemoryAllocationMode::Persistent);
        let _small = mm.reserve(4096).unwrap();
        let refused = mm.reserve(u64::MAX - 256);
        assert!(
            matches!(refused, Err(IoError::BufferTooBig { max, .. }) if max == props().max_page_size),
            "{refused:?}"
        );
        assert_eq!(mm.memory_usage().bytes_reserved, 4096);
    }
}

#[test]
fn a_capture_window_reservation_above_the_largest_page_is_too_big() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.capture_begin();
    let refused = mm.reserve(2 * props().max_page_size);
    assert!(
        matches!(refused, Err(IoError::BufferTooBig { .. })),
        "{refused:?}"
    );
    assert!(mm.capture_end().is_empty());
    assert_eq!(mm.memory_usage().bytes_reserved, 0);
}
