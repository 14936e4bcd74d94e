//! The xlog-compatible `GpuMemoryManager`'s documented behaviour on the host backend.

use std::sync::Arc;

use mem_budget::{
    AllocTag, BudgetDevice, BudgetError, BudgetScope, DeviceRuntime, GpuMemoryManager, MemoryBudget,
};

fn legacy(limit: u64) -> Arc<GpuMemoryManager> {
    Arc::new(GpuMemoryManager::new(
        BudgetDevice::host_with_capacity(1 << 30),
        MemoryBudget::bytes(limit),
    ))
}

fn with_runtime(local: u64, global: u64) -> Arc<GpuMemoryManager> {
    let device = BudgetDevice::host_with_capacity(1 << 30);
    let runtime = Arc::new(DeviceRuntime::standard(
        device.clone(),
        MemoryBudget::bytes(global),
    ));
    Arc::new(GpuMemoryManager::with_runtime(device, MemoryBudget::bytes(local), runtime).unwrap())
}

#[test]
fn a_typed_allocation_holds_real_bytes_and_is_released_on_drop() {
    let manager = legacy(4096);
    let slice = manager.alloc::<u32>(100).unwrap();
    assert_eq!((slice.len(), slice.bytes()), (100, 400));
    assert_eq!(manager.allocated_bytes(), 400);
    let data: Vec<u32> = (0..100).map(|i| i * 7 + 1).collect();
    slice.write(&data).unwrap();
    let mut back = vec![0u32; 100];
    slice.read(&mut back).unwrap();
    assert_eq!(back, data);
    assert!(
        slice.write(&[0u32; 101]).is_err(),
        "a write past the slice is refused"
    );
    drop(slice);
    assert_eq!(manager.allocated_bytes(), 0);
    assert_eq!(manager.peak_bytes(), 400);
    assert_eq!(manager.alloc_count(), 1);
}

#[test]
fn an_allocation_past_the_budget_reports_every_number() {
    let manager = legacy(1000);
    let _held = manager.alloc::<u8>(600).unwrap();
    match manager.alloc::<u64>(60).unwrap_err() {
        BudgetError::ResourceExhausted {
            requested,
            allocated,
            limit,
            remaining,
            which,
        } => assert_eq!(
            (requested, allocated, limit, remaining, which),
            (480, 600, 1000, 400, BudgetScope::Local)
        ),
        other => panic!("expected ResourceExhausted, got {other:?}"),
    }
    assert_eq!(
        manager.allocated_bytes(),
        600,
        "the refusal claimed nothing"
    );
    assert_eq!(
        manager.alloc_count(),
        1,
        "a refused claim issues no device request"
    );
    let message = manager.check_budget(401).unwrap_err().to_string();
    assert!(
        message.contains("401") && message.contains("400 remaining"),
        "{message}"
    );
    manager.check_budget(400).unwrap();
}

#[test]
fn an_element_count_whose_size_overflows_is_a_typed_error() {
    let manager = legacy(u64::MAX);
    match manager.alloc::<u64>(usize::MAX).unwrap_err() {
        BudgetError::SizeOverflow { len, element_bytes } => {
            assert_eq!((len, element_bytes), (usize::MAX, 8))
        }
        other => panic!("expected SizeOverflow, got {other:?}"),
    }
    assert_eq!(manager.allocated_bytes(), 0);
}

#[test]
fn alloc_raw_without_a_runtime_is_a_kernel_error_not_a_fallback() {
    let manager = legacy(1 << 20);
    match manager.alloc_raw(64, AllocTag::SCRATCH).unwrap_err() {
        BudgetError::Kernel {
            operation, detail, ..
        } => {
            assert_eq!(operation, "alloc_raw");
            assert!(detail.contains("with_runtime"), "{detail}");
        }
        other => panic!("expected Kernel, got {other:?}"),
    }
    assert_eq!((manager.allocated_bytes(), manager.alloc_count()), (0, 0));
}

#[test]
fn a_global_refusal_rolls_the_local_claim_back_and_names_the_global_budget() {
    let manager = with_runtime(10_000, 1000);
    let block = manager.alloc_raw(700, AllocTag::ARENA).unwrap();
    assert_eq!(block.tag(), AllocTag::ARENA);
    match manager.alloc_raw(400, AllocTag::SCRATCH).unwrap_err() {
        BudgetError::ResourceExhausted {
            requested,
            allocated,
            limit,
            remaining,
            which,
        } => assert_eq!(
            (requested, allocated, limit, remaining, which),
            (400, 700, 1000, 300, BudgetScope::Global)
        ),
        other => panic!("expected a global refusal, got {other:?}"),
    }
    assert_eq!(
        manager.allocated_bytes(),
        700,
        "the local claim was rolled back"
    );
    assert!(matches!(
        manager.check_budget(400),
        Err(BudgetError::ResourceExhausted {
            which: BudgetScope::Global,
            ..
        })
    ));
    drop(block);
    let global = manager.runtime().unwrap().global_budget().unwrap();
    assert_eq!((manager.allocated_bytes(), global.charged()), (0, 0));
}

#[test]
fn a_runtime_allocation_goes_through_the_logged_stack_and_frees_through_it() {
    let manager = with_runtime(1 << 20, 1 << 20);
    let slice = manager.alloc::<f32>(16).unwrap();
    slice.write(&[1.5; 16]).unwrap();
    let mut back = [0f32; 16];
    slice.read(&mut back).unwrap();
    assert_eq!(back, [1.5; 16]);
    let runtime = Arc::clone(manager.runtime().unwrap());
    assert_eq!(runtime.global_budget().unwrap().charged(), 64);
    drop(slice);
    assert_eq!(runtime.global_budget().unwrap().charged(), 0);
    let events = runtime.log().unwrap().events();
    assert_eq!(
        events.len(),
        2,
        "one allocate and one free were logged: {events:?}"
    );
}

#[test]
fn record_free_never_changes_a_counter() {
    let manager = legacy(1000);
    manager.record_free(0).unwrap();
    assert!(matches!(
        manager.record_free(1),
        Err(BudgetError::Underflow {
            requested: 1,
            allocated: 0
        })
    ));
    let slice = manager.alloc::<u8>(100).unwrap();
    assert!(matches!(
        manager.record_free(50),
        Err(BudgetError::LiveAllocations {
            live_bytes: 100,
            ..
        })
    ));
    assert!(matches!(
        manager.record_free(101),
        Err(BudgetError::Underflow {
            requested: 101,
            allocated: 100
        })
    ));
    assert_eq!(
        (manager.allocated_bytes(), manager.peak_bytes()),
        (100, 100)
    );
    drop(slice);
    assert_eq!(manager.allocated_bytes(), 0);
}

#[test]
fn reset_peak_starts_from_the_live_level_and_reset_tracking_needs_nothing_live() {
    let manager = legacy(10_000);
    let a = manager.alloc::<u8>(3000).unwrap();
    let b = manager.alloc::<u8>(2000).unwrap();
    drop(b);
    assert_eq!(manager.peak_bytes(), 5000);
    manager.reset_peak();
    assert_eq!(manager.peak_bytes(), 3000);
    assert!(matches!(
        manager.reset_tracking(),
        Err(BudgetError::LiveAllocations {
            live_bytes: 3000,
            ..
        })
    ));
    assert_eq!(manager.alloc_count(), 2, "a refused reset changed nothing");
    drop(a);
    manager.reset_tracking().unwrap();
    assert_eq!((manager.peak_bytes(), manager.alloc_count()), (0, 0));
    assert_eq!(manager.remaining_bytes(), 10_000);
}

#[test]
fn accessors_report_the_device_and_budget_they_were_built_with() {
    let device = BudgetDevice::simulated(1 << 40);
    let manager = GpuMemoryManager::new(device.clone(), MemoryBudget::bytes(1 << 35));
    assert!(manager.device().same_device(&device));
    assert_eq!(manager.device().name(), "sim:0");
    assert_eq!(manager.budget(), &MemoryBudget::bytes(1 << 35));
    assert_eq!(manager.budget_limit_bytes(), 1 << 35);
    assert!(manager.runtime().is_none());
    manager.reap_pending_deallocations().unwrap();
    let budget = MemoryBudget::fraction_of(device.resource().as_ref(), 0.5).unwrap();
    assert_eq!(budget.device_bytes, 1 << 39);
}
