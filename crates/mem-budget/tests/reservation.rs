//! Reservations: claims without allocations, against both budgets.

use std::sync::Arc;

use mem_budget::{
    BudgetDevice, BudgetError, BudgetScope, DeviceRuntime, GpuMemoryManager, MemoryBudget,
};

fn runtime_manager(local: u64, global: u64) -> (Arc<GpuMemoryManager>, Arc<DeviceRuntime>) {
    let device = BudgetDevice::host_with_capacity(1 << 30);
    let runtime = Arc::new(DeviceRuntime::standard(
        device.clone(),
        MemoryBudget::bytes(global),
    ));
    let manager =
        GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(local), Arc::clone(&runtime));
    (Arc::new(manager.unwrap()), runtime)
}

#[test]
fn a_reservation_claims_both_budgets_and_allocates_nothing() {
    let (manager, runtime) = runtime_manager(1000, 2000);
    let global = runtime.global_budget().unwrap().clone();
    let events_before = runtime.log().unwrap().events().len();
    let token = manager.reserve_bytes(800).unwrap();
    assert_eq!(token.bytes(), 800);
    assert!(token.holds_global());
    assert_eq!((manager.allocated_bytes(), global.charged()), (800, 800));
    assert_eq!(
        manager.alloc_count(),
        0,
        "no device allocation was requested"
    );
    assert_eq!(
        runtime.log().unwrap().events().len(),
        events_before,
        "the device saw nothing"
    );
    assert_eq!(manager.peak_bytes(), 800);
    drop(token);
    assert_eq!((manager.allocated_bytes(), global.charged()), (0, 0));
}

#[test]
fn a_local_refusal_releases_the_global_claim_it_already_made() {
    let (manager, runtime) = runtime_manager(500, 2000);
    match manager.reserve_bytes(600).unwrap_err() {
        BudgetError::ResourceExhausted {
            which,
            requested,
            limit,
            ..
        } => {
            assert_eq!((which, requested, limit), (BudgetScope::Local, 600, 500))
        }
        other => panic!("expected a local refusal, got {other:?}"),
    }
    assert_eq!(
        runtime.global_budget().unwrap().charged(),
        0,
        "global claim rolled back"
    );
    assert_eq!(manager.allocated_bytes(), 0);
}

#[test]
fn a_global_refusal_claims_nothing_locally() {
    let (manager, _runtime) = runtime_manager(5000, 1000);
    let _held = manager.reserve_bytes(900).unwrap();
    assert!(matches!(
        manager.reserve_bytes(200),
        Err(BudgetError::ResourceExhausted {
            which: BudgetScope::Global,
            requested: 200,
            allocated: 900,
            limit: 1000,
            remaining: 100
        })
    ));
    assert_eq!(manager.allocated_bytes(), 900);
}

#[test]
fn a_runtime_without_a_finite_global_budget_cannot_reserve() {
    let device = BudgetDevice::host_with_capacity(1 << 20);
    let bare = Arc::new(DeviceRuntime::builder(device.clone()).build());
    let manager = Arc::new(
        GpuMemoryManager::with_runtime(device.clone(), MemoryBudget::bytes(1000), bare).unwrap(),
    );
    assert!(matches!(
        manager.reserve_bytes(10),
        Err(BudgetError::NoGlobalBudget)
    ));
    let unlimited = Arc::new(DeviceRuntime::standard(
        device.clone(),
        MemoryBudget::unlimited(),
    ));
    let manager = Arc::new(
        GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(1000), unlimited).unwrap(),
    );
    assert!(matches!(
        manager.reserve_bytes(10),
        Err(BudgetError::NoGlobalBudget)
    ));
    assert_eq!(manager.allocated_bytes(), 0);
}

#[test]
fn a_legacy_manager_reserves_against_its_local_budget_only() {
    let manager = Arc::new(GpuMemoryManager::new(
        BudgetDevice::host_with_capacity(1 << 20),
        MemoryBudget::bytes(1000),
    ));
    let token = manager.reserve_bytes(1000).unwrap();
    assert!(!token.holds_global());
    assert!(
        manager.alloc::<u8>(1).is_err(),
        "the reservation holds the whole budget"
    );
    drop(token);
    assert!(manager.alloc::<u8>(1).is_ok());
}

#[test]
fn a_measured_region_that_only_uses_reservations_shows_no_device_allocation() {
    let (manager, _runtime) = runtime_manager(1 << 20, 1 << 20);
    // Arenas allocated before the measured region.
    let _arena = manager.alloc::<u8>(4096).unwrap();
    manager.reset_alloc_count();
    let before = manager.alloc_count();
    for _ in 0..100 {
        let _token = manager.reserve_bytes(1024).unwrap();
    }
    assert_eq!(
        manager.alloc_count() - before,
        0,
        "per-operation device allocations"
    );
    // And the counter does see a real allocation.
    let _late = manager.alloc::<u8>(1).unwrap();
    assert_eq!(manager.alloc_count() - before, 1);
}
