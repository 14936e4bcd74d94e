//! Defects found in other crates, each pinned by a test that fails today.
//!
//! They are `#[ignore]`d with the reason (see /work/team/bugs.md) so the
//! suite stays green; `cargo test -p mem-reliability --test known_bugs --
//! --ignored` shows them failing, and once fixed they pass and the ignore
//! goes.

use mem_pools::{IoError, MemoryAllocationMode, StorageCopyQueue, TargetRoom};
use mem_reliability::{Limits, World, props};
use mem_storage::{DeviceResource, StorageError, StreamId};

#[test]
#[ignore = "bug: mem-pools persistent pool allocates pages larger than MemoryDeviceProperties::max_page_size"]
fn a_persistent_reservation_never_allocates_a_page_above_the_device_max_page_size() {
    let mut w = World::new(Limits::default());
    let max_page = props().max_page_size;
    let m = w.manager(0);
    m.mode(MemoryAllocationMode::Persistent);
    let result = m.reserve(2 * max_page);
    let page = w.manager(0).memory_usage().bytes_reserved;
    assert!(
        page <= max_page,
        "a {} byte page was allocated on a device whose largest page is {max_page} bytes ({result:?})",
        page
    );
    assert!(
        matches!(result, Err(IoError::BufferTooBig { .. })),
        "{result:?}"
    );
}

#[test]
#[ignore = "bug: mem-budget GlobalDeviceBudget answers a request larger than its whole limit with the retryable OutOfMemory instead of TooBig"]
fn a_request_larger_than_the_whole_global_budget_is_too_big_not_retryable() {
    let w = World::new(Limits::default());
    let limit = Limits::default().global;
    let stack = w.device().storage(0);
    let err = stack
        .resource()
        .allocate(limit + 1, StreamId::DEFAULT)
        .unwrap_err();
    assert!(
        matches!(err, StorageError::TooBig { max, .. } if max == limit),
        "a request that can never fit must not invite a retry: {err:?}"
    );
}

#[test]
#[ignore = "bug: mem-pools copy_relocation of a plan made before capture_begin synchronizes and copies on the capturing stream"]
fn copying_a_relocation_inside_a_capture_window_makes_no_device_call() {
    let mut w = World::new(Limits::default());
    let m = w.manager(0);
    let _small: Vec<_> = (0..3).map(|_| m.reserve(1000).unwrap()).collect();
    let _grow = m.reserve(9000).unwrap();
    let plan = m.plan_relocation(TargetRoom::MayAllocate);
    assert!(!plan.is_empty());
    m.capture_begin();
    let before = w.device().calls();
    let copied = w.manager(0).copy_relocation(plan, &mut StorageCopyQueue);
    let calls = w.device().calls() - before;
    assert!(
        copied.is_err() || calls == 0,
        "{calls} device calls (synchronize, copy) inside the capture window"
    );
    drop(w.manager(0).capture_end());
}
