//! Reserving, freeing and resolving allocations.

mod common;

use common::*;
use mem_pools::{IoError, MemoryConfiguration};

#[test]
fn a_reserved_slice_holds_the_bytes_written_into_it() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let h = mm.reserve(1000).unwrap();
    let data = pattern(3, 1000);
    mm.write(h.binding(), &data).unwrap();
    let mut out = vec![0; 1000];
    mm.read(h.binding(), &mut out).unwrap();
    assert_eq!(out, data);
    assert_eq!(h.size(), 1000);
}

#[test]
fn dropping_the_last_handle_frees_the_slice_for_reuse_without_a_new_page() {
    let mut mm = manager(sliced());
    let h = mm.reserve(4096).unwrap();
    let first = mm.get_storage(h.binding()).unwrap();
    drop(h);
    let h2 = mm.reserve(4096).unwrap();
    assert_eq!(mm.get_storage(h2.binding()).unwrap(), first);
    assert_eq!(mm.stats().storage_allocs, 1);
    assert_eq!(mm.memory_usage().number_allocs, 1);
}

#[test]
fn a_binding_of_a_dropped_allocation_is_stale_not_the_next_allocation() {
    let mut mm = manager(sliced());
    let h = mm.reserve(4096).unwrap();
    let b = h.binding();
    drop(h);
    let _h2 = mm.reserve(4096).unwrap();
    assert!(matches!(
        mm.get_storage(b),
        Err(IoError::StaleBinding { .. })
    ));
    assert!(matches!(
        mm.get_cursor(b),
        Err(IoError::StaleBinding { .. })
    ));
}

#[test]
fn a_binding_from_another_manager_is_refused() {
    let mut a = manager(sliced());
    let mut b = manager(sliced());
    let h = a.reserve(16).unwrap();
    let _other = b.reserve(16).unwrap();
    assert!(matches!(
        b.get_storage(h.binding()),
        Err(IoError::ForeignBinding { .. })
    ));
    assert!(matches!(
        b.write(h.binding(), &[1]),
        Err(IoError::ForeignBinding { .. })
    ));
}

#[test]
fn a_zero_size_reservation_is_a_valid_empty_allocation() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let h = mm.reserve(0).unwrap();
    let view = mm.get_storage(h.binding()).unwrap();
    assert_eq!(view.size(), 0);
    let other = mm.reserve(0).unwrap();
    assert_ne!(mm.get_storage(other.binding()).unwrap(), view);
    assert!(mm.write(h.binding(), &[1]).is_err());
}

#[test]
fn sizes_near_u64_max_are_typed_errors_and_change_nothing() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    for size in [u64::MAX, u64::MAX - 255, u64::MAX / 2, 1 << 40] {
        let err = mm.reserve(size).unwrap_err();
        assert!(
            matches!(
                err,
                IoError::BufferTooBig { .. } | IoError::InvalidSize { .. }
            ),
            "{err}"
        );
    }
    mm.mode(mem_pools::MemoryAllocationMode::Persistent);
    assert!(matches!(
        mm.reserve(u64::MAX),
        Err(IoError::InvalidSize { .. })
    ));
    assert!(matches!(
        mm.reserve(u64::MAX - 300),
        Err(IoError::BufferTooBig { .. })
    ));
    assert_eq!(mm.memory_usage(), Default::default());
}

#[test]
fn can_mut_holds_for_exactly_one_holder() {
    let mut mm = manager(sliced());
    let h = mm.reserve(64).unwrap();
    assert!(h.can_mut());
    let c = h.clone();
    assert!(!h.can_mut());
    drop(c);
    assert!(h.can_mut());
}

#[test]
fn a_handle_dropped_on_another_thread_is_freed_at_the_next_call() {
    let mut mm = manager(sliced());
    let h = mm.reserve(4096).unwrap();
    std::thread::spawn(move || drop(h)).join().unwrap();
    assert_eq!(
        mm.memory_usage().number_allocs,
        0,
        "usage counts the drop at once"
    );
    assert!(
        mm.has_pending_drops(),
        "the slice itself is freed at the next call"
    );
    mm.cleanup(false);
    assert!(!mm.has_pending_drops());
    assert_eq!(mm.memory_usage().number_allocs, 0);
}

#[test]
fn get_resource_narrows_to_the_requested_range_and_refuses_past_the_end() {
    let mut mm = manager(sliced());
    let h = mm.reserve(1000).unwrap();
    let full = mm.get_resource(h.binding(), None, None).unwrap();
    let part = mm.get_resource(h.binding(), Some(100), Some(200)).unwrap();
    assert_eq!(part.size, 100);
    assert_eq!(part.ptr.0, full.ptr.0 + 100);
    assert!(matches!(
        mm.get_resource(h.binding(), Some(10), Some(1001)),
        Err(IoError::OutOfBounds { .. })
    ));
    assert!(matches!(
        mm.get_resource(h.binding(), Some(20), Some(10)),
        Err(IoError::OutOfBounds { .. })
    ));
}

#[test]
fn handles_and_bindings_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<mem_pools::ManagedMemoryHandle>();
    assert_send_sync::<mem_pools::ManagedMemoryBinding>();
    assert_send_sync::<mem_pools::MemoryManagement<mem_storage::HostStorage>>();
}

#[test]
fn handles_may_outlive_their_manager() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let h = mm.reserve(100).unwrap();
    let clone = h.clone();
    drop(mm);
    drop(h);
    assert!(clone.can_mut());
    drop(clone);
}

#[test]
fn every_manager_gets_its_own_id() {
    let ids: std::collections::HashSet<u64> = (0..16).map(|_| manager(sliced()).id()).collect();
    assert_eq!(ids.len(), 16);
}

#[test]
fn a_handle_of_any_size_class_round_trips_its_bytes() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let sizes = [1, 255, 256, 257, 64 * KIB, 64 * KIB + 1, 3 * MIB, 20 * MIB];
    let handles: Vec<_> = sizes.iter().map(|&s| mm.reserve(s).unwrap()).collect();
    for (i, h) in handles.iter().enumerate() {
        mm.write(h.binding(), &pattern(i as u64, h.size() as usize))
            .unwrap();
    }
    for (i, h) in handles.iter().enumerate() {
        let mut out = vec![0; h.size() as usize];
        mm.read(h.binding(), &mut out).unwrap();
        assert_eq!(
            out,
            pattern(i as u64, h.size() as usize),
            "size {}",
            h.size()
        );
    }
}

#[test]
fn handles_dropped_on_many_threads_while_reserving_are_all_freed() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let (tx, rx) = std::sync::mpsc::channel::<mem_pools::ManagedMemoryHandle>();
    let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
    let droppers: Vec<_> = (0..3)
        .map(|_| {
            let rx = rx.clone();
            std::thread::spawn(move || {
                while let Ok(h) = {
                    let guard = rx.lock().unwrap();
                    guard.recv()
                } {
                    drop(h);
                }
            })
        })
        .collect();
    for i in 0..5000u64 {
        let h = mm.reserve(64 + (i % 13) * 100).unwrap();
        tx.send(h).unwrap();
    }
    drop(tx);
    for d in droppers {
        d.join().unwrap();
    }
    let late = mm.drain_drops();
    assert!(late <= 5000, "{late}");
    assert_eq!(mm.drain_drops(), 0, "a second drain finds nothing");
    assert_eq!(mm.memory_usage().number_allocs, 0);
    assert_eq!(mm.stats().allocation_count.allocated, 5000);
}
