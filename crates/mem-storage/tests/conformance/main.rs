//! The conformance suite (in the spirit of RMM's) applied to every backend
//! and adaptor stack of mem-storage. CUDA runs when a driver and a device
//! are present and prints `skipping: …` otherwise.

mod pattern;
mod resource_suite;
mod storage_suite;

use mem_storage::units::GIB;
use mem_storage::{
    CudaAllocMode, CudaResource, DeviceResource, FaultInjection, HostResource, LoggingResource,
    SimulatedResource, StatsResource, StorageError, TrackingResource, cuda_available,
};

/// Run both suites on one resource shared by reference.
fn conform<R: DeviceResource>(r: &R) {
    resource_suite::run(r);
    storage_suite::run(r);
}

#[test]
fn host_memory_conforms() {
    let host = HostResource::new();
    conform(&host);
    assert_eq!(
        host.live_allocations(),
        0,
        "the suite left allocations behind"
    );
}

#[test]
fn a_small_host_device_conforms_and_refuses_past_its_capacity() {
    let host = HostResource::with_capacity(64 << 20);
    conform(&host);
    assert_eq!(host.live_allocations(), 0);
}

#[test]
fn the_simulated_device_conforms_without_bytes() {
    let sim = SimulatedResource::new(80 * GIB);
    conform(&sim);
    assert_eq!(sim.live_allocations(), 0);
    assert_eq!(sim.mem_info().unwrap().free, 80 * GIB);
}

#[test]
fn every_adaptor_stack_over_host_memory_conforms() {
    let stack = LoggingResource::new(StatsResource::new(TrackingResource::new(
        FaultInjection::new(HostResource::with_capacity(GIB)),
    )));
    conform(&stack);
    let stats = stack.inner().stats();
    assert_eq!(stats.current_bytes, 0);
    assert_eq!(stats.current_count, 0);
    assert!(
        stats.total_count > 400,
        "the suite made {} allocations",
        stats.total_count
    );
    assert!(
        stats.failed_allocations >= 1,
        "the 1 PiB refusal was not counted"
    );
    let tracking = stack.inner().inner();
    assert!(
        tracking.leak_report().is_empty(),
        "{}",
        tracking.leak_report()
    );
    assert_eq!(tracking.inner().injected(), 0);
    assert!(tracking.inner().calls() > stats.total_count);
    let events = stack.events();
    assert_eq!(
        events.len() as u64,
        stats.total_count * 2 + stats.failed_allocations + stats.failed_frees
    );
}

#[test]
fn every_adaptor_alone_conforms_over_both_host_and_simulated_devices() {
    conform(&LoggingResource::new(HostResource::with_capacity(GIB)));
    conform(&StatsResource::new(SimulatedResource::new(80 * GIB)));
    conform(&TrackingResource::with_backtraces(
        HostResource::with_capacity(GIB),
    ));
    conform(&FaultInjection::new(SimulatedResource::new(80 * GIB)));
    let sim_stack = TrackingResource::new(LoggingResource::new(SimulatedResource::new(24 * GIB)));
    conform(&sim_stack);
    assert_eq!(sim_stack.outstanding_count(), 0);
}

#[test]
fn a_shared_trait_object_stack_conforms() {
    let shared: std::sync::Arc<dyn DeviceResource> =
        std::sync::Arc::new(TrackingResource::new(HostResource::with_capacity(GIB)));
    conform(&shared);
    let boxed: Box<dyn DeviceResource> = Box::new(StatsResource::new(SimulatedResource::new(GIB)));
    conform(&boxed);
    assert_eq!(shared.mem_info().unwrap().free, GIB);
}

#[test]
fn a_failed_flush_keeps_bytes_counted() {
    storage_suite::a_failed_flush_keeps_bytes_counted();
}

/// The CUDA tests share device 0 and its default memory pool, whose
/// counters the pool test reads: one at a time (libtest runs a binary's
/// tests on parallel threads).
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static DEVICE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    DEVICE.lock().unwrap_or_else(|p| p.into_inner())
}

fn cuda_or_skip(mode: Option<CudaAllocMode>) -> Option<CudaResource> {
    if !cuda_available() {
        eprintln!("skipping: the CUDA driver library (libcuda) is not present on this machine");
        return None;
    }
    let made = match mode {
        None => CudaResource::new(0),
        Some(mode) => CudaResource::with_mode(0, mode),
    };
    match made {
        Ok(cuda) => Some(cuda),
        Err(StorageError::NoDevice { reason }) => {
            eprintln!("skipping: {reason}");
            None
        }
        Err(err @ StorageError::Unsupported { .. }) => {
            eprintln!("skipping: {err}");
            None
        }
        Err(err) => panic!("a CUDA device is present but the resource could not be made: {err}"),
    }
}

#[test]
fn cuda_memory_conforms_in_the_mode_the_device_prefers() {
    let _device = one_at_a_time();
    let Some(cuda) = cuda_or_skip(None) else {
        return;
    };
    conform(&cuda);
    assert_eq!(cuda.live_allocations(), 0);
}

#[test]
fn cuda_memory_conforms_with_synchronous_and_stream_ordered_allocation() {
    let _device = one_at_a_time();
    for mode in [CudaAllocMode::Sync, CudaAllocMode::StreamOrdered] {
        let Some(cuda) = cuda_or_skip(Some(mode)) else {
            continue;
        };
        conform(&StatsResource::new(&cuda));
        assert_eq!(cuda.live_allocations(), 0);
    }
}

#[test]
fn cuda_copies_on_a_second_stream_are_ordered_by_events() {
    let _device = one_at_a_time();
    let Some(cuda) = cuda_or_skip(None) else {
        return;
    };
    let copy_stream = cuda.create_stream().unwrap();
    let s0 = mem_storage::StreamId::DEFAULT;
    let a = cuda.allocate(1 << 20, s0).unwrap();
    let b = cuda.allocate(1 << 20, s0).unwrap();
    cuda.fill(a, 0x42, 1 << 20, s0).unwrap();
    cuda.wait_for_all_streams(copy_stream).unwrap();
    cuda.copy(a, b, 1 << 20, copy_stream).unwrap();
    let done = cuda.record(copy_stream).unwrap();
    done.synchronize().unwrap();
    assert!(done.is_complete().unwrap());
    let mut back = vec![0u8; 1 << 20];
    cuda.read(b, &mut back, copy_stream).unwrap();
    assert!(
        back.iter().all(|&x| x == 0x42),
        "the copy on the second stream saw unfilled memory"
    );
    assert!(matches!(
        cuda.copy(a, mem_storage::DevicePtr(a.0 + 256), 4096, s0),
        Err(StorageError::InvalidArgument { .. })
    ));
    cuda.synchronize(copy_stream).unwrap();
    cuda.deallocate(a, 1 << 20, s0).unwrap();
    cuda.deallocate(b, 1 << 20, copy_stream).unwrap();
    // The frees are stream-ordered: wait for them, so that the next test
    // (which reads the driver pool's counters) starts from a settled pool.
    cuda.synchronize(copy_stream).unwrap();
    cuda.synchronize(s0).unwrap();
    cuda.release_stream(copy_stream).unwrap();
    assert!(matches!(
        cuda.synchronize(copy_stream),
        Err(StorageError::UnknownStream { .. })
    ));
}

#[test]
fn a_missing_driver_or_device_is_no_device_never_a_panic() {
    // Ordinal 4096 exists nowhere: NoDevice with or without a driver.
    let err = CudaResource::new(4096).unwrap_err();
    assert!(matches!(err, StorageError::NoDevice { .. }), "{err}");
    if !cuda_available() {
        for mode in [CudaAllocMode::Sync, CudaAllocMode::StreamOrdered] {
            let err = CudaResource::with_mode(0, mode).unwrap_err();
            assert!(
                matches!(&err, StorageError::NoDevice { reason } if reason.contains("libcuda")),
                "{err}"
            );
        }
    }
}

#[test]
fn the_driver_pool_counts_stream_ordered_memory_and_trims_when_asked() {
    let _device = one_at_a_time();
    let Some(cuda) = cuda_or_skip(Some(CudaAllocMode::StreamOrdered)) else {
        return;
    };
    let s0 = mem_storage::StreamId::DEFAULT;
    // The default stream is the device's: waiting on it settles frees that
    // earlier resources ordered there, so `before` is a still picture.
    cuda.synchronize(s0).unwrap();
    let before = cuda.driver_pool_stats().unwrap();
    let p = cuda.allocate(64 << 20, s0).unwrap();
    cuda.synchronize(s0).unwrap();
    let during = cuda.driver_pool_stats().unwrap();
    assert!(
        during.used_current >= before.used_current + (64 << 20),
        "{during:?}"
    );
    assert!(during.reserved_current >= during.used_current);
    cuda.deallocate(p, 64 << 20, s0).unwrap();
    cuda.synchronize(s0).unwrap();
    cuda.trim_driver_pool(0).unwrap();
    let after = cuda.driver_pool_stats().unwrap();
    assert_eq!(after.used_current, before.used_current);
    assert!(after.reserved_current <= during.reserved_current);
    if let Some(sync) = cuda_or_skip(Some(CudaAllocMode::Sync)) {
        assert!(matches!(
            sync.driver_pool_stats(),
            Err(StorageError::Unsupported { .. })
        ));
    }
}
