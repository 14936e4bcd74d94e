//! The manager on each kind of device: host, simulated, a device too small.

use std::sync::Arc;

use mem_budget::{
    BudgetDevice, BudgetError, BudgetScope, DeviceRuntime, GpuMemoryManager, MemoryBudget,
};
use mem_storage::StorageError;
use mem_storage::units::GIB;

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

/// A resource that records every `stream_wait` it is asked for.
#[derive(Debug, Default)]
struct WaitRecorder {
    host: mem_storage::HostResource,
    waits: std::sync::Mutex<Vec<(u64, u64)>>,
}

impl mem_storage::DeviceResource for WaitRecorder {
    fn backend(&self) -> &'static str {
        "wait-recorder"
    }
    fn allocate(
        &self,
        bytes: u64,
        stream: mem_storage::StreamId,
    ) -> Result<mem_storage::DevicePtr, StorageError> {
        self.host.allocate(bytes, stream)
    }
    fn deallocate(
        &self,
        ptr: mem_storage::DevicePtr,
        bytes: u64,
        stream: mem_storage::StreamId,
    ) -> Result<(), StorageError> {
        self.host.deallocate(ptr, bytes, stream)
    }
    fn alignment(&self) -> u64 {
        self.host.alignment()
    }
    fn mem_info(&self) -> Result<mem_storage::MemInfo, StorageError> {
        self.host.mem_info()
    }
    fn stream_wait(
        &self,
        waiter: mem_storage::StreamId,
        waited: mem_storage::StreamId,
    ) -> Result<(), StorageError> {
        self.waits.lock().unwrap().push((waiter.0, waited.0));
        Ok(())
    }
}

#[test]
fn the_global_budget_forwards_stream_ordering_to_the_device_below() {
    use mem_storage::{DeviceResource, StreamId};
    let budget =
        mem_budget::GlobalDeviceBudget::new(WaitRecorder::default(), MemoryBudget::bytes(GIB));
    budget.stream_wait(StreamId(2), StreamId(1)).unwrap();
    assert_eq!(*budget.upstream().waits.lock().unwrap(), vec![(2, 1)]);
}

#[test]
fn a_request_above_the_whole_global_budget_is_too_big_and_names_the_numbers() {
    use mem_storage::{DeviceResource, StreamId};
    let budget = mem_budget::GlobalDeviceBudget::new(
        mem_storage::HostResource::with_capacity(GIB),
        MemoryBudget::bytes(1 << 20),
    );
    let err = budget
        .allocate((1 << 20) + 1, StreamId::DEFAULT)
        .unwrap_err();
    assert!(
        matches!(err, StorageError::TooBig { requested, max, .. } if requested == (1 << 20) + 1 && max == 1 << 20),
        "{err:?}"
    );
    assert!(
        !err.is_retryable(),
        "no reclaim can make room above the limit"
    );
    assert_eq!(
        budget.mem_info().unwrap().free,
        1 << 20,
        "nothing was claimed"
    );
}
