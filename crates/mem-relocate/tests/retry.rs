//! The reservation retry rule through the tests' small runtime (`TestStreams`), as the
//! gpumem facade follows it: a storage refusal gives back what every
//! stream caches and tries once more.

mod common;

use common::*;
use std::sync::Arc;

use mem_relocate::{RelocatingStreams, RelocationError, StorageCopyQueue};
use mem_storage::{HostResource, ResourceStorage};

fn two_streams_on(capacity: u64) -> TestStreams<ResourceStorage<Arc<HostResource>>> {
    let device = Arc::new(HostResource::with_capacity(capacity));
    let mut set = TestStreams::new(
        manager_on(ResourceStorage::new(device.clone())),
        StorageCopyQueue,
    );
    set.add_stream(manager_on(ResourceStorage::new(device)));
    set
}

#[test]
fn a_refused_reservation_frees_every_streams_cached_pages_and_succeeds() {
    let mut set = two_streams_on(16 * KIB);
    let filled: Vec<_> = (0..4).map(|_| set.reserve(1, 4 * KIB).unwrap()).collect();
    drop(filled);
    assert_eq!(set.bytes_allocated(), 16 * KIB, "stream 1 caches its pages");
    let handle = set
        .reserve(0, 4 * KIB)
        .expect("cached pages were given back");
    assert_eq!(set.bytes_allocated(), 4 * KIB);
    drop(handle);
}

#[test]
fn a_refusal_freeing_cannot_fix_is_returned_after_one_retry() {
    let mut set = two_streams_on(16 * KIB);
    let _held: Vec<_> = (0..4).map(|_| set.reserve(1, 4 * KIB).unwrap()).collect();
    let err = set.reserve(0, 4 * KIB).unwrap_err();
    assert!(matches!(err, RelocationError::Engine(_)), "{err}");
    assert_eq!(
        set.bytes_allocated(),
        16 * KIB,
        "nothing live was given back"
    );
}
