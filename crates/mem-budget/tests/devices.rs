//! The manager on each kind of device: host, simulated, a device too small.

use std::sync::Arc;

use mem_budget::{
    BudgetDevice, BudgetError, BudgetScope, DeviceRuntime, GpuMemoryManager, MemoryBudget,
};
use mem_storage::StorageError;

const GIB: u64 = 1 << 30;

#[test]
fn a_simulated_device_enforces_budgets_for_workloads_larger_than_this_machine() {
    let device = BudgetDevice::simulated(80 * GIB);
    let runtime = Arc::new(DeviceRuntime::standard(
        device.clone(),
        MemoryBudget::bytes(70 * GIB),
    ));
    let manager = Arc::new(
        GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(60 * GIB), runtime).unwrap(),
    );
    let weights = manager.alloc::<u8>((30 * GIB) as usize).unwrap();
    let activations = manager.alloc::<f32>((5 * GIB) as usize).unwrap();
    assert_eq!(manager.allocated_bytes(), 50 * GIB);
    assert!(matches!(
        manager.alloc::<u8>((20 * GIB) as usize),
        Err(BudgetError::ResourceExhausted { which: BudgetScope::Local, remaining, .. }) if remaining == 10 * GIB
    ));
    // The simulated device holds no bytes: moving data is a typed refusal.
    assert!(matches!(
        weights.write(&[1, 2, 3]),
        Err(StorageError::Unsupported { .. })
    ));
    drop((weights, activations));
    assert_eq!(manager.allocated_bytes(), 0);
    assert_eq!(manager.peak_bytes(), 50 * GIB);
}

#[test]
fn a_request_the_device_can_never_hold_is_a_kernel_error_with_the_devices_reason() {
    let manager = Arc::new(GpuMemoryManager::new(
        BudgetDevice::host_with_capacity(1000),
        MemoryBudget::unlimited(),
    ));
    match manager.alloc::<u8>(2000).unwrap_err() {
        BudgetError::Kernel {
            operation,
            source: Some(StorageError::TooBig { requested, max, .. }),
            ..
        } => {
            assert_eq!((operation, requested, max), ("alloc", 2000, 1000))
        }
        other => panic!("expected Kernel(TooBig), got {other:?}"),
    }
    assert_eq!(
        (manager.allocated_bytes(), manager.peak_bytes()),
        (0, 0),
        "nothing stays claimed"
    );
}

#[test]
fn a_full_device_under_a_generous_budget_is_a_kernel_error_not_a_budget_refusal() {
    let manager = Arc::new(GpuMemoryManager::new(
        BudgetDevice::host_with_capacity(1000),
        MemoryBudget::bytes(10_000),
    ));
    let _held = manager.alloc::<u8>(800).unwrap();
    let err = manager.alloc::<u8>(300).unwrap_err();
    assert!(
        matches!(
            &err,
            BudgetError::Kernel {
                source: Some(StorageError::OutOfMemory { free: 200, .. }),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("300"),
        "the message names the request: {err}"
    );
    assert_eq!(manager.allocated_bytes(), 800);
}

#[test]
fn a_budget_can_be_a_fraction_of_the_device() {
    let device = BudgetDevice::host_with_capacity(4000);
    let budget = MemoryBudget::fraction_of(device.resource().as_ref(), 0.75).unwrap();
    let manager = Arc::new(GpuMemoryManager::new(device, budget));
    assert_eq!(manager.budget_limit_bytes(), 3000);
    assert!(manager.alloc::<u8>(3001).is_err());
    assert!(manager.alloc::<u8>(3000).is_ok());
}
