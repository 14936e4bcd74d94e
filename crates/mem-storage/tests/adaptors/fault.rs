use std::sync::Arc;

use mem_storage::{
    DeviceResource, FaultInjection, FaultPlan, HostResource, Operation, SimulatedResource,
    StorageError, StreamId,
};

const S: StreamId = StreamId::DEFAULT;

/// A small scenario: three allocations, a write, two frees, one left.
fn scenario<R: DeviceResource>(r: &R) -> Result<(), StorageError> {
    let a = r.allocate(100, S)?;
    let b = r.allocate(200, S)?;
    r.fill(a, 1, 100, S)?;
    r.deallocate(a, 100, S)?;
    let c = r.allocate(300, S)?;
    r.deallocate(b, 200, S)?;
    r.deallocate(c, 300, S)?;
    Ok(())
}

#[test]
fn an_unarmed_run_counts_calls_and_fails_none() {
    let faulty = FaultInjection::new(SimulatedResource::new(1 << 20));
    scenario(&faulty).unwrap();
    assert_eq!((faulty.calls(), faulty.injected()), (7, 0));
}

#[test]
fn failing_each_kth_call_in_turn_fails_exactly_that_call_and_changes_nothing_below() {
    for k in 1..=7 {
        let faulty =
            FaultInjection::new(SimulatedResource::new(1 << 20)).with_plan(FaultPlan::Nth(k));
        let err = scenario(&faulty).unwrap_err();
        match err {
            StorageError::Injected { call, .. } => assert_eq!(call, k),
            other => panic!("call {k}: expected an injected fault, got {other}"),
        }
        assert_eq!((faulty.calls(), faulty.injected()), (k, 1));
        // The failed call never reached the simulated device: what it holds
        // is exactly what the calls before k left live.
        let live_before_k = [0, 1, 2, 2, 1, 2, 1][k as usize - 1];
        assert_eq!(faulty.inner().live_allocations(), live_before_k, "k = {k}");
    }
}

#[test]
fn from_nth_fails_every_later_call_and_disarm_restores_service() {
    let faulty =
        FaultInjection::new(HostResource::with_capacity(1 << 20)).with_plan(FaultPlan::FromNth(2));
    let a = faulty.allocate(64, S).unwrap();
    assert!(faulty.write(a, &[1; 8], S).is_err());
    assert!(faulty.synchronize(S).is_err());
    assert!(faulty.mem_info().is_err());
    assert_eq!(faulty.injected(), 3);
    faulty.disarm();
    faulty.deallocate(a, 64, S).unwrap();
}

#[test]
fn a_predicate_picks_calls_and_a_chosen_error_is_returned() {
    let oom = StorageError::OutOfMemory {
        backend: "test",
        refused_by: mem_storage::Refuser::Device,
        requested: 1 << 20,
        free: 0,
        total: 1 << 20,
    };
    let big: Arc<dyn Fn(&mem_storage::Call) -> bool + Send + Sync> =
        Arc::new(|call| call.operation == Operation::Allocate && call.bytes >= 1 << 20);
    let faulty = FaultInjection::new(SimulatedResource::new(1 << 30))
        .with_plan(FaultPlan::Matching(big))
        .with_error(oom.clone());
    let small = faulty.allocate(4096, S).unwrap();
    assert_eq!(faulty.allocate(1 << 20, S).unwrap_err(), oom);
    assert!(faulty.allocate(1 << 20, S).unwrap_err().is_retryable());
    faulty.deallocate(small, 4096, S).unwrap();
    assert_eq!((faulty.calls(), faulty.injected()), (4, 2));
}

#[test]
fn only_counted_operations_are_counted_or_failed() {
    let faulty = FaultInjection::new(SimulatedResource::new(1 << 20))
        .counting(&[Operation::Deallocate])
        .with_plan(FaultPlan::Nth(1));
    scenario(&faulty).unwrap_err();
    assert_eq!(faulty.calls(), 1, "allocations and fills are not counted");
    faulty.reset_count();
    assert_eq!(faulty.calls(), 0);
}
