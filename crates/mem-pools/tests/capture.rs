//! The memory side of graph capture.

mod common;

use common::*;
use mem_pools::{CaptureState, IoError, MemoryAllocationMode, MemoryConfiguration};

#[test]
fn priming_keeps_the_working_set_so_the_recorded_pass_allocates_nothing() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.capture_begin();
    // Warmup: three transient buffers, each dropped at once.
    for size in [MIB, 2 * MIB, MIB] {
        drop(mm.reserve(size).unwrap());
    }
    assert_eq!(
        mm.memory_usage().number_allocs,
        3,
        "priming retains every slice"
    );
    let allocs = mm.stats().storage_allocs;
    mm.capture_priming_end();
    assert_eq!(mm.memory_usage().number_allocs, 0);
    // The recorded pass reuses them.
    for size in [MIB, 2 * MIB, MIB] {
        drop(mm.reserve(size).unwrap());
    }
    assert_eq!(mm.stats().storage_allocs, allocs);
    let pinned = mm.capture_end();
    // Warmup is inside the window: all three primed slices belong to the graph.
    assert_eq!(pinned.len(), 3);
}

#[test]
fn a_reservation_needing_new_memory_inside_the_window_names_the_size() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.capture_begin();
    drop(mm.reserve(4096).unwrap());
    mm.capture_priming_end();
    let err = mm.reserve(8192).unwrap_err();
    assert!(
        matches!(err, IoError::CaptureWouldAllocate { size: 8192, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("lengthen the warmup"));
    assert!(mm.reserve(4096).is_ok(), "the primed slice still serves");
}

#[test]
fn capture_end_pins_exactly_the_touched_slices_and_leaves_others_alone() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let before = mm.reserve(1000).unwrap();
    mm.capture_begin();
    let a = mm.reserve(512).unwrap();
    mm.capture_priming_end();
    let pinned = mm.capture_end();
    assert_eq!(pinned.len(), 1);
    assert_eq!(
        mm.get_storage(pinned[0].binding()).unwrap(),
        mm.get_storage(a.binding()).unwrap()
    );
    assert!(
        before.can_mut(),
        "an untouched buffer keeps its in-place semantics"
    );
    assert!(!a.can_mut(), "the graph holds the touched one");
    drop(a);
    mm.cleanup(true);
    assert_eq!(
        mm.memory_usage().number_allocs,
        2,
        "the graph's handle keeps the slice"
    );
    drop(pinned);
    mm.cleanup(true);
    assert_eq!(mm.memory_usage().number_allocs, 1);
}

#[test]
fn an_extent_freed_in_the_window_is_reclaimed_at_capture_end() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.capture_begin();
    drop(mm.reserve(4096).unwrap());
    mm.capture_priming_end();
    let h = mm.reserve(4096).unwrap();
    let view = mm.get_storage(h.binding()).unwrap();
    drop(h);
    let pinned = mm.capture_end();
    assert_eq!(pinned.len(), 1);
    assert_eq!(mm.get_storage(pinned[0].binding()).unwrap(), view);
    assert_eq!(mm.memory_usage().number_allocs, 1);
}

#[test]
fn cleanup_during_a_capture_frees_nothing() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    drop(mm.reserve(4096).unwrap());
    let reserved = mm.memory_usage().bytes_reserved;
    mm.capture_begin();
    mm.cleanup(true);
    assert_eq!(mm.memory_usage().bytes_reserved, reserved);
    let _ = mm.capture_end();
    mm.cleanup(true);
    assert_eq!(mm.memory_usage().bytes_reserved, 0);
}

#[test]
fn capture_end_restores_the_mode_and_keeps_open_persistent_windows() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.capture_begin();
    assert_eq!(mm.effective_mode(), MemoryAllocationMode::Persistent);
    let _ = mm.capture_end();
    assert_eq!(mm.effective_mode(), MemoryAllocationMode::Auto);
    mm.mode(MemoryAllocationMode::Persistent);
    mm.capture_begin();
    let _ = mm.capture_end();
    assert_eq!(mm.effective_mode(), MemoryAllocationMode::Persistent);
}

#[test]
fn wrong_order_capture_calls_are_no_ops() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.capture_priming_end();
    assert!(mm.capture_end().is_empty());
    assert_eq!(mm.capture_state(), CaptureState::default());
    mm.capture_begin();
    let a = mm.reserve(256).unwrap();
    mm.capture_begin(); // re-entrant: keeps the record
    assert_eq!(
        mm.capture_state(),
        CaptureState {
            active: true,
            priming: true,
            touched: 1
        }
    );
    mm.capture_priming_end();
    mm.capture_priming_end();
    assert!(!mm.capture_state().priming);
    let pinned = mm.capture_end();
    assert_eq!(pinned.len(), 1);
    assert!(mm.capture_end().is_empty());
    drop(a);
}

#[test]
fn a_bind_inside_the_window_touches_the_assigned_allocation() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let assigned = mm.reserve(64).unwrap();
    mm.capture_begin();
    let reserved = mm.reserve(128).unwrap();
    mm.capture_priming_end();
    mm.bind(reserved, assigned.clone(), 5).unwrap();
    let pinned = mm.capture_end();
    assert_eq!(pinned.len(), 1);
    assert_eq!(mm.get_cursor(pinned[0].binding()).unwrap(), 5);
    assert_eq!(
        mm.get_storage(pinned[0].binding()).unwrap(),
        mm.get_storage(assigned.binding()).unwrap()
    );
}
