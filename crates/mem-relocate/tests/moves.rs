//! How memory moves: all-or-nothing pages, pins and raw addresses, lossless
//! aborts, leaks on a failed wait, and what reclaim leaves — on real host
//! memory through the tests' small runtime (`TestStreams`).

mod common;

use common::*;
use std::sync::Arc;

use mem_pools::RelocationCopyError;
use mem_relocate::{
    Planned, RelocatingStreams, RelocationError, RelocationReason, StorageCopyQueue,
};
use mem_storage::{FaultInjection, FaultPlan, HostResource, Operation, ResourceStorage};

#[test]
fn a_failed_wait_leaks_and_never_frees() {
    let fault =
        Arc::new(FaultInjection::new(HostResource::new()).counting(&[Operation::Synchronize]));
    let mut set = TestStreams::new(
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
        Some(RelocationError::Copy(RelocationCopyError::Wait { moves: 1, leaked_bytes, .. })) if leaked_bytes == 2 * KIB
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

/// Counts every call, copying through the storage.
#[derive(Default)]
struct Counting {
    calls: usize,
}

impl mem_relocate::CopyQueue<mem_storage::HostStorage> for Counting {
    fn wait_device(
        &mut self,
        storage: &mut mem_storage::HostStorage,
    ) -> Result<(), mem_storage::StorageError> {
        self.calls += 1;
        mem_storage::ComputeStorage::synchronize(storage)
    }
    fn copy(
        &mut self,
        storage: &mut mem_storage::HostStorage,
        src: &mem_storage::StorageHandle,
        dst: &mem_storage::StorageHandle,
    ) -> Result<(), mem_storage::StorageError> {
        self.calls += 1;
        mem_storage::ComputeStorage::copy(storage, src, dst)
    }
    fn wait_copies(
        &mut self,
        storage: &mut mem_storage::HostStorage,
    ) -> Result<(), mem_storage::StorageError> {
        self.calls += 1;
        mem_storage::ComputeStorage::synchronize(storage)
    }
}

#[test]
fn a_relocation_with_nothing_movable_waits_on_nothing() {
    let mut mm = manager();
    let mut queue = Counting::default();
    let outcome = mem_relocate::relocate_memory(&mut mm, RelocationReason::Capture, &mut queue);
    assert_eq!(outcome.unwrap(), Default::default());
    let old = written(&mut mm, KIB, 1);
    let _big = written(&mut mm, 5 * KIB, 2);
    let _raw = mm.get_resource(old.binding(), None, None).unwrap();
    let outcome = mem_relocate::relocate_memory(&mut mm, RelocationReason::Capture, &mut queue);
    assert_eq!(outcome.unwrap().moved_slices, 0);
    assert_eq!(queue.calls, 0, "no wait, no copy");
    mm.release_raw(old.binding()).unwrap();
    let outcome = mem_relocate::relocate_memory(&mut mm, RelocationReason::Capture, &mut queue);
    assert_eq!(outcome.unwrap().moved_slices, 1);
    assert_eq!(
        queue.calls, 3,
        "wait for the device, one copy, wait for the copies"
    );
    assert!(intact(&mut mm, &old, 1));
}
