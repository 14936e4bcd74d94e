//! The manager on a real CUDA device; skips with a reason where there is none.

use std::sync::Arc;

use mem_budget::{
    AllocTag, BudgetDevice, BudgetError, DeviceRuntime, GpuMemoryManager, MemoryBudget,
};

/// The device, or `None` after printing why the test is skipped.
fn cuda_device() -> Option<BudgetDevice> {
    if !mem_storage::cuda_available() {
        println!("skipping: the CUDA driver library is not available on this machine");
        return None;
    }
    match BudgetDevice::cuda(0) {
        Ok(device) => Some(device),
        Err(error) => {
            println!("skipping: {error}");
            None
        }
    }
}

#[test]
fn a_cuda_device_is_refused_with_a_reason_when_no_driver_is_present() {
    if mem_storage::cuda_available() {
        println!("skipping: a CUDA driver is present, so cuda(0) is expected to open");
        return;
    }
    match BudgetDevice::cuda(0) {
        Err(BudgetError::DeviceUnavailable { reason }) => {
            assert!(reason.contains("cuda:0"), "{reason}")
        }
        other => panic!("expected DeviceUnavailable, got {other:?}"),
    }
}

#[test]
fn cuda_allocations_round_trip_bytes_and_respect_both_budgets() {
    let Some(device) = cuda_device() else { return };
    let runtime = Arc::new(DeviceRuntime::standard(
        device.clone(),
        MemoryBudget::bytes(64 << 20),
    ));
    let manager = Arc::new(
        GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(32 << 20), runtime).unwrap(),
    );
    let slice = manager.alloc::<u32>(1 << 20).unwrap();
    let data: Vec<u32> = (0..1 << 20).collect();
    slice.write(&data).unwrap();
    let mut back = vec![0u32; 1 << 20];
    slice.read(&mut back).unwrap();
    assert_eq!(back, data);
    let block = manager.alloc_raw(8 << 20, AllocTag::WORKSPACE).unwrap();
    assert!(
        manager.alloc::<u8>(32 << 20).is_err(),
        "local budget refuses"
    );
    drop((slice, block));
    manager.reap_pending_deallocations().unwrap();
    assert_eq!(manager.allocated_bytes(), 0);
    assert_eq!(
        manager
            .runtime()
            .unwrap()
            .global_budget()
            .unwrap()
            .charged(),
        0
    );
}
