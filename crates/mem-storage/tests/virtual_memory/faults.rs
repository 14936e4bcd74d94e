//! Failing each virtual-memory call of a scenario in turn: the failed call
//! never reaches the backend, what the tracking adaptor saw is exactly what
//! the backend holds, and cleaning up from the leak report leaves nothing.

use mem_storage::{
    FaultInjection, FaultPlan, Operation, SimulatedVirtualMemory, StorageError, TrackingResource,
    VirtualMemory,
};

use crate::small_host;

/// An arena's life in miniature: grow, write, shrink, move a chunk, let go.
fn scenario<V: VirtualMemory>(vm: &V) -> Result<(), StorageError> {
    let g = vm.granularity();
    let range = vm.reserve_range(4 * g)?;
    let a = vm.create_chunk(g)?;
    let b = vm.create_chunk(2 * g)?;
    vm.map(range.id, 0, a)?;
    vm.map(range.id, g, b)?;
    vm.fill_mapped(range.base, 1, 3 * g)?;
    vm.unmap(range.id, 0, 3 * g)?;
    vm.map(range.id, 3 * g, a)?;
    vm.physical_info()?;
    vm.unmap(range.id, 3 * g, g)?;
    vm.release_chunk(a)?;
    vm.release_chunk(b)?;
    vm.free_range(range.id)?;
    Ok(())
}

/// What the tracker saw must be what the backend holds; then clean up.
fn check_and_clean<V: VirtualMemory>(stack: &TrackingResource<FaultInjection<V>>, k: u64) {
    let backend = stack.inner().inner();
    let held = backend.vm_stats();
    let report = stack.virtual_leak_report();
    assert_eq!(
        held.refused_calls, 0,
        "k = {k}: an injected call reached the backend"
    );
    assert_eq!(held.live_ranges(), report.ranges.len() as u64, "k = {k}");
    assert_eq!(held.live_chunks(), report.chunks.len() as u64, "k = {k}");
    let mapped: Vec<_> = report
        .chunks
        .iter()
        .filter(|c| c.mapped_at.is_some())
        .collect();
    assert_eq!(held.live_mappings(), mapped.len() as u64, "k = {k}");
    let mapped_bytes: u64 = mapped.iter().map(|c| c.bytes).sum();
    assert_eq!(held.mapped_bytes, mapped_bytes, "k = {k}");
    stack.inner().disarm();
    for c in &mapped {
        let (range, offset) = c.mapped_at.unwrap_or_else(|| unreachable!());
        stack.unmap(range, offset, c.bytes).unwrap();
    }
    for c in &report.chunks {
        stack.release_chunk(c.chunk).unwrap();
    }
    for r in &report.ranges {
        stack.free_range(r.range.id).unwrap();
    }
    assert!(
        backend.vm_stats().is_idle(),
        "k = {k}: {:?}",
        backend.vm_stats()
    );
}

fn sweep<V: VirtualMemory>(make: impl Fn() -> V) {
    let counting = FaultInjection::new(make());
    scenario(&counting).unwrap();
    let calls = counting.calls();
    assert_eq!(
        calls, 13,
        "every lifecycle call, the fill and physical_info count"
    );
    for k in 1..=calls {
        let stack = TrackingResource::new(FaultInjection::new(make()).with_plan(FaultPlan::Nth(k)));
        let err = scenario(&stack).unwrap_err();
        assert!(
            matches!(err, StorageError::Injected { call, .. } if call == k),
            "k = {k}: {err}"
        );
        check_and_clean(&stack, k);
    }
}

#[test]
fn failing_each_call_in_turn_leaves_the_simulated_backend_consistent() {
    sweep(|| SimulatedVirtualMemory::new(1 << 30));
}

#[test]
#[cfg_attr(miri, ignore)]
fn failing_each_call_in_turn_leaves_the_host_backend_consistent() {
    sweep(small_host);
}

#[test]
fn a_plan_sees_map_and_unmap_with_their_address_and_bytes() {
    let faulty = FaultInjection::new(SimulatedVirtualMemory::new(1 << 30))
        .counting(&[Operation::Map, Operation::Unmap])
        .with_plan(FaultPlan::Matching(std::sync::Arc::new(|call| {
            call.operation == Operation::Map && call.bytes > 2 << 20
        })));
    let g = faulty.granularity();
    let range = faulty.reserve_range(8 * g).unwrap();
    let (small, big) = (
        faulty.create_chunk(g).unwrap(),
        faulty.create_chunk(4 * g).unwrap(),
    );
    assert!(matches!(
        faulty.map(range.id, 4 * g, big),
        Err(StorageError::Injected { .. })
    ));
    faulty.map(range.id, 0, small).unwrap();
    faulty.unmap(range.id, 0, g).unwrap();
    assert_eq!((faulty.calls(), faulty.injected()), (3, 1));
    assert_eq!(
        faulty.inner().vm_stats().maps,
        1,
        "the big map never reached the device"
    );
    for c in [small, big] {
        faulty.release_chunk(c).unwrap();
    }
    faulty.free_range(range.id).unwrap();
}
