//! Checks of `ResourceStorage` (the `ComputeStorage` every pool uses) over
//! any resource: ids, views, deferred frees, and failed flushes.

use mem_storage::{
    ComputeStorage, DeviceResource, FaultInjection, FaultPlan, HostResource, Operation,
    ResourceStorage, StorageError, StorageHandle, StorageUtilization,
};

use crate::pattern::pattern;

/// Run every storage check over pages of `resource`.
pub fn run<R: DeviceResource>(resource: R) {
    let mut storage = ResourceStorage::new(resource);
    a_stale_id_is_an_error_after_dealloc(&mut storage);
    views_past_the_end_of_a_page_are_rejected(&mut storage);
    bytes_stay_counted_until_flush(&mut storage);
    views_resolve_inside_their_page(&mut storage);
    if storage.holds_memory() {
        views_write_read_and_copy_their_own_bytes(&mut storage);
    }
}

fn a_stale_id_is_an_error_after_dealloc<S: ComputeStorage>(s: &mut S) {
    let page = s.alloc(4096).unwrap();
    s.get(&page).unwrap();
    s.dealloc(page.id).unwrap();
    assert!(matches!(s.get(&page), Err(StorageError::UnknownId { id }) if id == page.id));
    assert!(matches!(
        s.dealloc(page.id),
        Err(StorageError::UnknownId { .. })
    ));
    s.flush().unwrap();
    assert!(matches!(s.get(&page), Err(StorageError::UnknownId { .. })));
    // A new page never reuses the old id.
    let next = s.alloc(4096).unwrap();
    assert_ne!(next.id, page.id);
    s.dealloc(next.id).unwrap();
    s.flush().unwrap();
}

fn views_past_the_end_of_a_page_are_rejected<S: ComputeStorage>(s: &mut S) {
    let page = s.alloc(1024).unwrap();
    let past = |offset, size| StorageHandle {
        id: page.id,
        utilization: StorageUtilization { offset, size },
    };
    for view in [
        past(0, 1025),
        past(1024, 1),
        past(1000, 100),
        past(u64::MAX, 2),
        past(1, u64::MAX),
    ] {
        match s.get(&view) {
            Err(StorageError::OutOfBounds { page_size, .. }) => assert_eq!(page_size, 1024),
            other => {
                panic!("view {view:?} of a 1024-byte page: expected OutOfBounds, got {other:?}")
            }
        }
    }
    assert!(page.narrow(Some(10), Some(2000)).is_none());
    assert!(page.narrow(Some(20), Some(10)).is_none());
    s.get(&past(1024, 0))
        .expect("an empty view at the end is inside the page");
    s.dealloc(page.id).unwrap();
    s.flush().unwrap();
}

fn bytes_stay_counted_until_flush<S: ComputeStorage>(s: &mut S) {
    let base = s.bytes_allocated();
    let a = s.alloc(1 << 20).unwrap();
    let b = s.alloc(3 << 10).unwrap();
    assert_eq!(s.bytes_allocated(), base + (1 << 20) + (3 << 10));
    s.dealloc(a.id).unwrap();
    assert_eq!(
        s.bytes_allocated(),
        base + (1 << 20) + (3 << 10),
        "a queued page is still held"
    );
    s.flush().unwrap();
    assert_eq!(s.bytes_allocated(), base + (3 << 10));
    s.dealloc(b.id).unwrap();
    s.flush().unwrap();
    assert_eq!(s.bytes_allocated(), base);
}

fn views_resolve_inside_their_page<S: ComputeStorage<Resource = mem_storage::DeviceView>>(
    s: &mut S,
) {
    let page = s.alloc(8192).unwrap();
    let whole = s.get(&page).unwrap();
    assert_eq!(whole.ptr.0 % s.alignment(), 0);
    let view = page.narrow(Some(4096), Some(6144)).unwrap();
    let part = s.get(&view).unwrap();
    assert_eq!(part.ptr.0, whole.ptr.0 + 4096);
    assert_eq!(part.size, 2048);
    s.dealloc(page.id).unwrap();
    s.flush().unwrap();
}

fn views_write_read_and_copy_their_own_bytes<S: ComputeStorage>(s: &mut S) {
    let page = s.alloc(4096).unwrap();
    let (left, right) = (
        page.narrow(None, Some(2048)).unwrap(),
        page.narrow(Some(2048), None).unwrap(),
    );
    let data = pattern(5, 2048);
    s.write(&left, &data).unwrap();
    s.fill(&right, 0x5A).unwrap();
    let mut back = vec![0u8; 2048];
    s.read(&right, &mut back).unwrap();
    assert!(
        back.iter().all(|&x| x == 0x5A),
        "a fill of the right half is wrong"
    );
    s.copy(&left, &right).unwrap();
    s.synchronize().unwrap();
    s.read(&right, &mut back).unwrap();
    assert_eq!(back, data, "a copy between views changed the bytes");
    assert!(matches!(
        s.write(&left, &[0; 2049]),
        Err(StorageError::OutOfBounds { .. })
    ));
    assert!(matches!(
        s.read(&left, &mut [0; 2049]),
        Err(StorageError::OutOfBounds { .. })
    ));
    assert!(matches!(
        s.copy(&page, &left),
        Err(StorageError::OutOfBounds { .. })
    ));
    s.dealloc(page.id).unwrap();
    s.flush().unwrap();
}

/// A failed flush keeps the page queued and its bytes counted; a later
/// flush that succeeds gives it back.
pub fn a_failed_flush_keeps_bytes_counted() {
    let faulty = FaultInjection::new(HostResource::with_capacity(1 << 24))
        .counting(&[Operation::Deallocate]);
    let mut storage = ResourceStorage::new(faulty);
    let page = storage.alloc(1 << 16).unwrap();
    storage.dealloc(page.id).unwrap();
    storage.resource().set_plan(FaultPlan::FromNth(1));
    let err = storage.flush().unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::Injected {
                operation: "deallocate",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        storage.bytes_allocated(),
        1 << 16,
        "release was not proven, so the bytes stay counted"
    );
    assert_eq!(storage.resource().inner().live_allocations(), 1);
    storage.resource().disarm();
    storage.flush().unwrap();
    assert_eq!(storage.bytes_allocated(), 0);
    assert_eq!(storage.resource().inner().live_allocations(), 0);
}
