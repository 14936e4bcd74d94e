//! Fault injection: upstream failures roll claims back; failed frees stay charged.

use std::sync::Arc;

use mem_budget::{
    BudgetDevice, BudgetError, DeviceRuntime, GlobalDeviceBudget, GpuMemoryManager, MemoryBudget,
};
use mem_storage::{
    DeviceResource, FaultInjection, FaultPlan, HostResource, Operation, StreamId, TrackingResource,
};

type Faulty = FaultInjection<Arc<TrackingResource<HostResource>>>;

/// A device whose resource fails what a test arms, over a leak tracker.
fn faulty_device() -> (
    BudgetDevice,
    Arc<Faulty>,
    Arc<TrackingResource<HostResource>>,
) {
    let tracker = Arc::new(TrackingResource::new(HostResource::with_capacity(1 << 24)));
    let faulty = Arc::new(FaultInjection::new(Arc::clone(&tracker)));
    let device =
        BudgetDevice::from_resource("host", 0, Arc::clone(&faulty) as Arc<dyn DeviceResource>);
    (device, faulty, tracker)
}

#[test]
fn an_upstream_allocation_failure_rolls_back_the_global_claim() {
    let upstream = FaultInjection::new(HostResource::with_capacity(1 << 20))
        .counting(&[Operation::Allocate])
        .with_plan(FaultPlan::Nth(2));
    let budget = GlobalDeviceBudget::new(upstream, MemoryBudget::bytes(10_000));
    let first = budget.allocate(1000, StreamId::DEFAULT).unwrap();
    assert!(budget.allocate(1000, StreamId::DEFAULT).is_err());
    assert_eq!(
        budget.charged(),
        1000,
        "the failed allocation is not charged"
    );
    budget.deallocate(first, 1000, StreamId::DEFAULT).unwrap();
    assert_eq!(budget.charged(), 0);
}

#[test]
fn a_failed_free_in_the_global_budget_stays_charged_and_is_counted() {
    let upstream = FaultInjection::new(HostResource::with_capacity(1 << 20))
        .counting(&[Operation::Deallocate])
        .with_plan(FaultPlan::Nth(1));
    let budget = GlobalDeviceBudget::new(upstream, MemoryBudget::bytes(10_000));
    let ptr = budget.allocate(4096, StreamId::DEFAULT).unwrap();
    assert!(budget.deallocate(ptr, 4096, StreamId::DEFAULT).is_err());
    let handle = budget.handle();
    assert_eq!(
        (
            handle.charged(),
            handle.free_failures(),
            handle.free_failure_bytes()
        ),
        (4096, 1, 4096)
    );
    // The retry succeeds and finally gives the bytes back.
    budget.deallocate(ptr, 4096, StreamId::DEFAULT).unwrap();
    assert_eq!(handle.charged(), 0);
}

#[test]
fn a_device_failure_on_alloc_rolls_back_the_local_claim_as_a_kernel_error() {
    let (device, faulty, tracker) = faulty_device();
    faulty.set_plan(FaultPlan::Matching(Arc::new(|c| {
        c.operation == Operation::Allocate
    })));
    let manager = Arc::new(GpuMemoryManager::new(device, MemoryBudget::bytes(1 << 20)));
    match manager.alloc::<u8>(100).unwrap_err() {
        BudgetError::Kernel {
            operation, source, ..
        } => {
            assert_eq!(operation, "alloc");
            assert!(source.is_some(), "the device's error is kept as the source");
        }
        other => panic!("expected Kernel, got {other:?}"),
    }
    assert_eq!(manager.allocated_bytes(), 0);
    assert_eq!(manager.alloc_count(), 1, "the request was issued");
    assert_eq!(tracker.outstanding_count(), 0);
}

#[test]
fn a_legacy_free_that_fails_stays_charged_and_is_counted() {
    let (device, faulty, _tracker) = faulty_device();
    let manager = Arc::new(GpuMemoryManager::new(device, MemoryBudget::bytes(1 << 20)));
    let slice = manager.alloc::<u64>(8).unwrap();
    faulty.set_plan(FaultPlan::Matching(Arc::new(|c| {
        c.operation == Operation::Deallocate
    })));
    drop(slice);
    assert_eq!(manager.allocated_bytes(), 64, "release was not proven");
    assert_eq!(manager.deallocation_failure_count(), 1);
    assert_eq!(manager.deallocation_failure_bytes(), 64);
    assert!(
        manager.reset_tracking().is_err(),
        "charged bytes are live bytes"
    );
}

#[test]
fn a_runtime_free_that_fails_is_retried_by_the_next_reap() {
    let (device, faulty, tracker) = faulty_device();
    let runtime = Arc::new(DeviceRuntime::standard(
        device.clone(),
        MemoryBudget::bytes(1 << 20),
    ));
    let global = runtime.global_budget().unwrap().clone();
    let manager = Arc::new(
        GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(1 << 20), runtime).unwrap(),
    );
    let slice = manager.alloc::<u32>(256).unwrap();
    faulty.set_plan(FaultPlan::Matching(Arc::new(|c| {
        c.operation == Operation::Deallocate
    })));
    drop(slice);
    assert_eq!((manager.allocated_bytes(), global.charged()), (1024, 1024));
    assert_eq!(
        (
            manager.deallocation_failure_count(),
            manager.deallocation_failure_bytes()
        ),
        (1, 1024)
    );
    // Still failing: the reap reports it, keeps it pending and counts again.
    assert!(matches!(
        manager.reap_pending_deallocations(),
        Err(BudgetError::Kernel { .. })
    ));
    assert_eq!(manager.runtime().unwrap().pending_deallocations(), 1);
    assert_eq!(
        (
            manager.deallocation_failure_count(),
            manager.deallocation_failure_bytes()
        ),
        (2, 1024)
    );
    // The device recovers: the reap gives everything back.
    faulty.disarm();
    manager.reap_pending_deallocations().unwrap();
    assert_eq!((manager.allocated_bytes(), global.charged()), (0, 0));
    assert_eq!(manager.deallocation_failure_bytes(), 0);
    assert_eq!(manager.deallocation_failure_count(), 2, "history is kept");
    assert_eq!(tracker.outstanding_count(), 0, "nothing leaked");
    manager.reset_tracking().unwrap();
    assert_eq!(manager.deallocation_failure_count(), 0);
}

#[test]
fn every_single_fault_in_an_alloc_and_free_program_leaves_consistent_counters() {
    // Count the calls of a clean run, then fail each call in turn.
    let program = |manager: &Arc<GpuMemoryManager>| {
        let mut held = Vec::new();
        for len in [64usize, 128, 256, 512] {
            if let Ok(slice) = manager.alloc::<u8>(len) {
                held.push(slice);
            }
        }
        let _ = manager.alloc_raw(1024, mem_budget::AllocTag::SCRATCH);
        drop(held);
        let _ = manager.reap_pending_deallocations();
    };
    let (device, faulty, _) = faulty_device();
    let runtime = Arc::new(
        DeviceRuntime::builder(device.clone())
            .global_budget(MemoryBudget::bytes(1 << 20))
            .build(),
    );
    program(&Arc::new(
        GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(1 << 20), runtime).unwrap(),
    ));
    let calls = faulty.calls();
    assert!(calls >= 10, "the program makes {calls} resource calls");
    for k in 1..=calls {
        let (device, faulty, tracker) = faulty_device();
        faulty.set_plan(FaultPlan::Nth(k));
        let runtime = Arc::new(
            DeviceRuntime::builder(device.clone())
                .global_budget(MemoryBudget::bytes(1 << 20))
                .build(),
        );
        let global = runtime.global_budget().unwrap().clone();
        let manager = Arc::new(
            GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(1 << 20), runtime).unwrap(),
        );
        program(&manager);
        // Whatever failed, the ledgers agree with the device.
        assert_eq!(
            manager.allocated_bytes(),
            tracker.outstanding_bytes(),
            "fault at call {k}"
        );
        assert_eq!(
            global.charged(),
            tracker.outstanding_bytes(),
            "fault at call {k}"
        );
        manager.reap_pending_deallocations().unwrap();
        assert_eq!(
            (manager.allocated_bytes(), global.charged()),
            (0, 0),
            "fault at call {k}"
        );
        assert_eq!(tracker.outstanding_count(), 0, "fault at call {k}: leaked");
    }
}
