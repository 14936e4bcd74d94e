//! The device runtime: stack order, deferred frees, pool pages under the budget.

use std::sync::Arc;

use mem_budget::{
    BudgetDevice, BudgetError, BudgetScope, DeviceRuntime, GlobalDeviceBudget, GpuMemoryManager,
    MemoryBudget,
};
use mem_storage::{
    Action, ComputeStorage, DeviceResource, Refuser, ResourceStorage, StatsResource, StorageError,
    StreamId,
};

#[test]
fn a_deferred_free_keeps_the_budget_charged_until_reaped() {
    let device = BudgetDevice::host_with_capacity(1 << 20);
    let runtime = Arc::new(
        DeviceRuntime::builder(device.clone())
            .global_budget(MemoryBudget::bytes(1000))
            .defer_frees()
            .build(),
    );
    let manager = Arc::new(
        GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(1000), Arc::clone(&runtime))
            .unwrap(),
    );
    let slice = manager.alloc::<u8>(800).unwrap();
    drop(slice);
    assert_eq!(runtime.pending_deallocations(), 1);
    assert_eq!(runtime.pending_bytes(), 800);
    assert!(
        matches!(
            manager.alloc::<u8>(800),
            Err(BudgetError::ResourceExhausted {
                which: BudgetScope::Local,
                ..
            })
        ),
        "the free is not complete, so the budget is not restored"
    );
    manager.reap_pending_deallocations().unwrap();
    assert_eq!(runtime.pending_deallocations(), 0);
    assert_eq!(manager.allocated_bytes(), 0);
    assert_eq!(runtime.global_budget().unwrap().charged(), 0);
    let again = manager.alloc::<u8>(800).unwrap();
    assert_eq!(again.len(), 800);
}

#[test]
fn dropping_the_last_runtime_completes_its_queued_frees() {
    let device = BudgetDevice::host_with_capacity(1 << 20);
    let parent = Arc::new(GpuMemoryManager::new(
        device.clone(),
        MemoryBudget::bytes(1000),
    ));
    let runtime = Arc::new(DeviceRuntime::builder(device.clone()).defer_frees().build());
    let overlay = parent.with_runtime_overlay(runtime).unwrap();
    drop(overlay.alloc::<u8>(500).unwrap());
    assert_eq!(parent.allocated_bytes(), 500, "queued, not yet freed");
    assert_eq!(device.resource().mem_info().unwrap().free, (1 << 20) - 500);
    drop(overlay);
    assert_eq!(
        parent.allocated_bytes(),
        0,
        "the last runtime holder reaped on drop"
    );
    assert_eq!(device.resource().mem_info().unwrap().free, 1 << 20);
}

#[test]
fn the_standard_stack_is_budget_over_logging_over_the_backend() {
    let device = BudgetDevice::host_with_capacity(1 << 20);
    let runtime = DeviceRuntime::standard(device, MemoryBudget::bytes(1000));
    // A request the budget refuses never reaches the logger below it.
    let refused = runtime.allocate(2000).unwrap_err();
    assert!(
        matches!(
            refused,
            StorageError::TooBig {
                requested: 2000,
                max: 1000,
                refused_by: Refuser::DeviceBudget,
                ..
            }
        ),
        "a request above the whole budget can never fit: {refused:?}"
    );
    assert!(!refused.is_retryable());
    let ptr = runtime.allocate(100).unwrap();
    runtime.deallocate(ptr, 100).unwrap();
    let actions: Vec<Action> = runtime
        .log()
        .unwrap()
        .events()
        .iter()
        .map(|e| e.action)
        .collect();
    assert_eq!(
        actions.len(),
        2,
        "only the allocation that passed the budget was logged: {actions:?}"
    );
    assert_eq!(
        runtime.resource().mem_info().unwrap().total,
        1000,
        "the budget caps what the device reports"
    );
    let held = runtime.allocate(600).unwrap();
    let refused = runtime.allocate(500).unwrap_err();
    assert!(
        matches!(
            refused,
            StorageError::OutOfMemory {
                requested: 500,
                free: 400,
                total: 1000,
                refused_by: Refuser::DeviceBudget,
                ..
            }
        ),
        "a request that fits the budget but not what is left is retryable: {refused:?}"
    );
    assert!(refused.is_out_of_memory());
    // The device itself refusing is told apart by type, not by a name.
    let device_full = BudgetDevice::host_with_capacity(1 << 12);
    let roomy = DeviceRuntime::standard(device_full, MemoryBudget::bytes(1 << 20));
    let refused = roomy.allocate(1 << 13).unwrap_err();
    assert_eq!(refused.refused_by(), Some(Refuser::Device), "{refused}");
    runtime.deallocate(held, 600).unwrap();
}

#[test]
fn pool_pages_from_resource_storage_are_charged_against_the_device_budget() {
    let device = BudgetDevice::host_with_capacity(1 << 24);
    let runtime = Arc::new(DeviceRuntime::standard(
        device.clone(),
        MemoryBudget::bytes(1 << 20),
    ));
    let global = runtime.global_budget().unwrap().clone();
    let mut pages = ResourceStorage::new(Arc::clone(runtime.resource()));
    let page = pages.alloc(512 << 10).unwrap();
    assert_eq!(global.charged(), 512 << 10);
    // The manager and the pool storage compete for the same device budget.
    let manager = Arc::new(
        GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(1 << 30), Arc::clone(&runtime))
            .unwrap(),
    );
    assert!(matches!(
        manager.alloc::<u8>(600 << 10),
        Err(BudgetError::ResourceExhausted { which: BudgetScope::Global, remaining, .. }) if remaining == 512 << 10
    ));
    assert!(
        pages.alloc(600 << 10).is_err(),
        "the storage is refused past the budget too"
    );
    pages.dealloc(page.id).unwrap();
    pages.flush().unwrap();
    assert_eq!(global.charged(), 0);
    assert!(manager.alloc::<u8>(600 << 10).is_ok());
}

#[test]
fn one_global_budget_is_shared_by_every_runtime_of_a_device() {
    let device = BudgetDevice::host_with_capacity(1 << 24);
    let capped = Arc::new(GlobalDeviceBudget::new(
        StatsResource::new(Arc::clone(device.resource())),
        MemoryBudget::bytes(1000),
    ));
    let handle = capped.handle();
    let runtimes: Vec<_> = (0..2)
        .map(|stream| {
            Arc::new(DeviceRuntime::from_stack(
                device.clone(),
                Arc::clone(&capped) as Arc<dyn DeviceResource>,
                Some(handle.clone()),
                StreamId(stream),
                false,
            ))
        })
        .collect();
    assert!(
        runtimes[0]
            .global_budget()
            .unwrap()
            .same_budget(runtimes[1].global_budget().unwrap())
    );
    let managers: Vec<_> = runtimes
        .iter()
        .map(|rt| {
            Arc::new(
                GpuMemoryManager::with_runtime(
                    device.clone(),
                    MemoryBudget::bytes(1000),
                    Arc::clone(rt),
                )
                .unwrap(),
            )
        })
        .collect();
    let _a = managers[0].alloc::<u8>(600).unwrap();
    assert!(
        managers[1].alloc::<u8>(600).is_err(),
        "the second runtime sees the first's bytes"
    );
    let _b = managers[1].alloc::<u8>(400).unwrap();
    assert_eq!(handle.charged(), 1000);
    assert_eq!(capped.upstream().allocation_count(), 2);
}

#[test]
fn a_runtime_for_another_device_is_refused_before_anything_is_shared() {
    let device = BudgetDevice::host_with_capacity(1 << 20);
    let other = BudgetDevice::host_with_capacity(1 << 20);
    let foreign = Arc::new(DeviceRuntime::standard(other, MemoryBudget::bytes(1000)));
    let err = GpuMemoryManager::with_runtime(
        device.clone(),
        MemoryBudget::bytes(1000),
        Arc::clone(&foreign),
    )
    .unwrap_err();
    assert!(matches!(err, BudgetError::DeviceMismatch { .. }), "{err}");
    let parent = Arc::new(GpuMemoryManager::new(device, MemoryBudget::bytes(1000)));
    let _held = parent.alloc::<u8>(10).unwrap();
    assert!(matches!(
        parent.with_runtime_overlay(foreign),
        Err(BudgetError::DeviceMismatch { .. })
    ));
    assert_eq!((parent.allocated_bytes(), parent.alloc_count()), (10, 1));
}
