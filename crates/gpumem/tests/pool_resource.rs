//! gpumem's pools behind the `DeviceResource` trait: allocate by address,
//! deallocate by address, and the mem-storage adaptors stacked on top.

mod common;

use common::*;
use gpumem::device::PoolResource;
use gpumem::prelude::*;
use gpumem::storage::{DevicePtr, DeviceResource, StatsResource, StorageError, StreamId};

#[test]
fn addresses_from_the_pools_hold_bytes_until_they_are_deallocated() {
    let device = host(2);
    let pools = PoolResource::new(device.clone());
    let s1 = device.stream(1).unwrap().id();
    let a = pools.allocate(3 * MIB, StreamId::DEFAULT).unwrap();
    let b = pools.allocate(4096, s1).unwrap();
    let empty = pools.allocate(0, StreamId::DEFAULT).unwrap();
    let align = pools.alignment();
    assert!(a.0.is_multiple_of(align) && b.0.is_multiple_of(align));
    assert!(
        empty != a && empty != b,
        "a zero-byte request gets its own address"
    );
    pools
        .write(DevicePtr(a.0 + MIB), &pattern(1, 4096), StreamId::DEFAULT)
        .unwrap();
    let mut out = vec![0; 4096];
    pools
        .read(DevicePtr(a.0 + MIB), &mut out, StreamId::DEFAULT)
        .unwrap();
    assert_eq!(out, pattern(1, 4096));
    assert_eq!(device.stats().allocation_count.current, 3);
    let past = pools.write(DevicePtr(b.0 + 4000), &[0; 200], s1);
    assert!(
        matches!(past, Err(StorageError::UnknownPointer { .. })),
        "{past:?}"
    );
    pools.deallocate(a, 3 * MIB, StreamId::DEFAULT).unwrap();
    pools.deallocate(b, 4096, s1).unwrap();
    pools.deallocate(empty, 0, StreamId::DEFAULT).unwrap();
    assert!(matches!(
        pools.deallocate(a, 3 * MIB, StreamId::DEFAULT),
        Err(StorageError::UnknownPointer { .. })
    ));
    device.drain();
    assert_eq!(device.stats().allocation_count.current, 0);
}

#[test]
fn freed_on_another_stream_the_memory_waits_for_that_streams_work() {
    let device = host(2);
    let pools = PoolResource::new(device.clone());
    let (a, b) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let ptr = pools.allocate(4096, a.id()).unwrap();
    b.submit(); // work on stream 1 that may read it
    pools.deallocate(ptr, 4096, b.id()).unwrap();
    a.cleanup();
    assert_eq!(a.held_bytes(), 4096, "held for stream 1's work");
    b.synchronize().unwrap();
    a.cleanup();
    assert_eq!(a.held_bytes(), 0);
}

#[test]
fn an_unknown_stream_and_an_out_of_memory_are_typed_errors() {
    let device = Device::host_with_capacity(64 * MIB)
        .ignore_env()
        .build()
        .unwrap();
    let pools = PoolResource::new(device);
    assert!(matches!(
        pools.allocate(64, StreamId(77)),
        Err(StorageError::UnknownStream { .. })
    ));
    let err = pools.allocate(1 << 40, StreamId::DEFAULT).unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::OutOfMemory { .. } | StorageError::TooBig { .. }
        ),
        "{err}"
    );
}

#[test]
fn the_storage_adaptors_stack_on_gpumems_pools() {
    let device = host(1);
    let stats = StatsResource::new(PoolResource::new(device.clone()));
    let p = stats.allocate(MIB, StreamId::DEFAULT).unwrap();
    let q = stats.allocate(2 * MIB, StreamId::DEFAULT).unwrap();
    stats.deallocate(p, MIB, StreamId::DEFAULT).unwrap();
    let counted = stats.stats();
    assert_eq!(counted.current_bytes, 2 * MIB, "{counted:?}");
    assert_eq!(counted.peak_bytes, 3 * MIB);
    stats.deallocate(q, 2 * MIB, StreamId::DEFAULT).unwrap();
}

#[test]
fn a_logged_trace_of_the_pools_carries_the_callers_tags() {
    let device = host(1);
    let log = gpumem::storage::LoggingResource::new(PoolResource::new(device));
    let weights = {
        let _t = gpumem::storage::tag_scope("weights");
        log.allocate(4 * MIB, StreamId::DEFAULT).unwrap()
    };
    let scratch = log.allocate(MIB, StreamId::DEFAULT).unwrap();
    log.deallocate(scratch, MIB, StreamId::DEFAULT).unwrap();
    log.deallocate(weights, 4 * MIB, StreamId::DEFAULT).unwrap();
    let mut out = Vec::new();
    log.write_trace(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let tagged: Vec<_> = text.lines().filter(|l| l.contains("\"tag\"")).collect();
    assert_eq!(
        tagged,
        [format!(
            r#"{{"op":"alloc","id":1,"size":{},"stream":0,"tag":"weights"}}"#,
            4 * MIB
        )]
    );
}
