//! CUDA virtual memory: the same suite and byte checks on a real device
//! when a driver, a device and VMM support are present; otherwise each test
//! prints why it skipped. Construction never panics, with or without a driver.

use mem_storage::{CudaVirtualMemory, StorageError, VirtualMemory, cuda_available};

use crate::{bytes, suite};

fn cuda_or_skip() -> Option<CudaVirtualMemory> {
    if !cuda_available() {
        eprintln!("skipping: the CUDA driver library (libcuda) is not present on this machine");
        return None;
    }
    match CudaVirtualMemory::new(0) {
        Ok(vm) => Some(vm),
        Err(StorageError::NoDevice { reason }) => {
            eprintln!("skipping: {reason}");
            None
        }
        Err(err @ StorageError::Unsupported { .. }) => {
            eprintln!("skipping: {err}");
            None
        }
        Err(err) => {
            panic!("a CUDA device is present but virtual memory could not be set up: {err}")
        }
    }
}

#[test]
fn cuda_virtual_memory_passes_the_suite_and_keeps_bytes_across_remaps() {
    let Some(vm) = cuda_or_skip() else {
        return;
    };
    let g = vm.granularity();
    assert!(
        g.is_power_of_two() && g >= 64 << 10,
        "driver granularity {g}"
    );
    suite::run(&vm);
    bytes::run(&vm);
    assert!(vm.physical_info().unwrap().total > 0);
    // Overlapping copies are refused, as on CudaResource.
    let range = vm.reserve_range(g).unwrap();
    let chunk = vm.create_chunk(g).unwrap();
    vm.map(range.id, 0, chunk).unwrap();
    let shifted = mem_storage::DevicePtr(range.base.0 + 256);
    assert!(matches!(
        vm.copy_mapped(range.base, shifted, 4096),
        Err(StorageError::InvalidArgument { .. })
    ));
    // Dropping with a live mapping unmaps and releases it.
    drop(vm);
}

#[test]
fn a_missing_driver_or_device_is_no_device_never_a_panic() {
    let err = CudaVirtualMemory::new(4096).unwrap_err();
    assert!(matches!(err, StorageError::NoDevice { .. }), "{err}");
    if !cuda_available() {
        let err = CudaVirtualMemory::new(0).unwrap_err();
        assert!(
            matches!(&err, StorageError::NoDevice { reason } if reason.contains("libcuda")),
            "{err}"
        );
        eprintln!("skipping the device part: no libcuda on this machine");
    }
}
