//! Building devices, the budget under the pools, streams and handles.

mod common;

use common::*;
use gpumem::prelude::*;
use gpumem::relocate::RelocationError;

#[test]
fn pool_pages_are_charged_to_the_device_budget() {
    let device = Device::host()
        .budget(Budget::Bytes(64 * MIB))
        .streams(2)
        .ignore_env()
        .build()
        .unwrap();
    let budget = device.budget();
    assert_eq!((budget.limit(), budget.charged()), (64 * MIB, 0));
    let a = device.stream(0).unwrap().reserve(100 * KIB).unwrap();
    let b = device.stream(1).unwrap().reserve(3 * MIB).unwrap();
    let reserved = device.stats().reserved_bytes.current;
    assert!(reserved >= 100 * KIB + 3 * MIB);
    assert_eq!(
        budget.charged(),
        reserved,
        "every page of every stream is charged"
    );
    drop((a, b));
    device.reclaim().unwrap();
    assert_eq!(budget.charged(), 0, "pages given back are uncharged");
}

#[test]
fn a_fraction_budget_resolves_against_the_device_total() {
    let device = Device::host_with_capacity(100 * MIB)
        .budget(Budget::Fraction(0.25))
        .ignore_env()
        .build()
        .unwrap();
    assert_eq!(device.budget().limit(), 25 * MIB);
    assert_eq!(device.mem_info().unwrap().total, 100 * MIB);
    assert_eq!(
        device.properties().max_page_size,
        25 * MIB,
        "pages are never larger than the budget"
    );
}

#[test]
fn cuda_is_a_typed_error_where_the_driver_is_missing() {
    match Device::cuda(0) {
        Err(GpuMemError::CudaUnavailable { ordinal, reason }) => {
            assert_eq!(ordinal, 0);
            assert!(!reason.is_empty());
            if gpumem::storage::cuda_available() {
                println!("skipping: CUDA driver present but device 0 unusable: {reason}");
            }
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(builder) => {
            assert!(gpumem::storage::cuda_available());
            let device = builder.streams(2).ignore_env().build().unwrap();
            let stream = device.stream(1).unwrap();
            let handle = stream.reserve(4096).unwrap();
            stream.write(&handle, &pattern(3, 4096)).unwrap();
            assert_eq!(read(&stream, &handle, 4096), pattern(3, 4096));
        }
    }
}

#[test]
fn streams_are_numbered_and_out_of_range_is_an_error() {
    let device = host(3);
    assert_eq!(device.streams().len(), 3);
    assert_eq!(device.default_stream().index(), 0);
    assert_eq!(device.stream(2).unwrap().index(), 2);
    assert!(matches!(
        device.stream(3),
        Err(GpuMemError::Relocation(RelocationError::UnknownStream {
            stream: 3,
            streams: 3
        }))
    ));
}

#[test]
fn a_handle_is_served_by_the_stream_that_reserved_it() {
    let device = host(2);
    let (s0, s1) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let handle = s1.reserve(1000).unwrap();
    assert_eq!(device.stream_of(&handle).unwrap().index(), 1);
    // Reading through another stream routes to the owner's engine.
    s1.write(&handle, &pattern(1, 1000)).unwrap();
    assert_eq!(read(&s0, &handle, 1000), pattern(1, 1000));
    // Binding belongs to the owner: on another stream it is refused.
    let other = s0.reserve(1000).unwrap();
    assert!(matches!(
        s0.bind(handle.clone(), other.clone()),
        Err(GpuMemError::Pool(
            gpumem::pools::IoError::ForeignBinding { .. }
        ))
    ));
    assert_eq!(
        read(&s0, &other, 4),
        vec![0; 4],
        "a refused bind changes nothing"
    );
}

#[test]
fn a_handle_of_another_device_is_foreign() {
    let (one, two) = (host(1), host(1));
    let handle = one.default_stream().reserve(64).unwrap();
    assert!(matches!(
        two.default_stream().record_use(&handle),
        Err(GpuMemError::ForeignHandle { .. })
    ));
    assert!(two.stream_of(&handle).is_err());
}

#[test]
fn the_simulated_backend_plans_more_memory_than_this_machine_has() {
    let device = Device::simulated(80 * GIB)
        .budget(Budget::Bytes(40 * GIB))
        .ignore_env()
        .build()
        .unwrap();
    let stream = device.default_stream();
    let handles: Vec<_> = (0..30).map(|_| stream.reserve(GIB).unwrap()).collect();
    assert_eq!(device.stats().requested_bytes.current, 30 * GIB);
    // An arena serves one allocation larger than a page; this one does not
    // fit the budget, and the refusal leaves no chunk behind.
    let err = stream.reserve(20 * GIB).unwrap_err();
    assert!(
        matches!(err, GpuMemError::OutOfMemory(_)),
        "over the budget: {err}"
    );
    assert_eq!(device.stats().reserved_bytes.current, 30 * GIB);
    assert_eq!(device.budget().charged(), 30 * GIB);
    let big = stream
        .reserve(10 * GIB - 1)
        .expect("what the budget leaves");
    drop((handles, big));
}

#[test]
fn simulated_pages_and_arena_slices_live_at_once_never_share_an_address() {
    let device = Device::simulated(80 * GIB).ignore_env().build().unwrap();
    let stream = device.default_stream();
    let range = |h: &ManagedMemoryHandle, len: u64| {
        let at = stream.device_ptr(h).unwrap().as_raw();
        at..at + len
    };
    // Pages (the persistent pool's) and arena slices (the default pools'),
    // both kinds more than once.
    let pages: Vec<_> = {
        let _window = stream.persistent();
        [MIB, 3 * MIB]
            .map(|len| (stream.reserve(len).unwrap(), len))
            .into()
    };
    let slices: Vec<_> = [MIB, 64 * MIB, GIB]
        .map(|len| (stream.reserve(len).unwrap(), len))
        .into();
    let ranges: Vec<_> = pages
        .iter()
        .chain(&slices)
        .map(|(h, len)| range(h, *len))
        .collect();
    for (i, a) in ranges.iter().enumerate() {
        for b in &ranges[i + 1..] {
            assert!(
                a.end <= b.start || b.end <= a.start,
                "{a:#x?} and {b:#x?} overlap"
            );
        }
    }
}

#[test]
fn lazy_pages_cost_no_memory_until_first_touched() {
    let device = Device::host()
        .pools(PoolLayout::SubSlices)
        .lazy_pages(true)
        .ignore_env()
        .build()
        .unwrap();
    let s = device.default_stream();
    let big = s.reserve(64 * MIB).unwrap();
    // The growable sliced pool's page: the next whole MiB above 64 MiB.
    let page = 65 * MIB;
    let stats = device.stats();
    assert_eq!(stats.reserved_bytes.current, page, "the page is counted");
    assert_eq!(stats.storage_allocs, 0, "but not allocated");
    assert_eq!(device.budget().charged(), 0);
    s.write(&big, &[1]).unwrap();
    assert_eq!(device.stats().storage_allocs, 1);
    assert_eq!(device.budget().charged(), page);
}

#[test]
fn lazy_arenas_map_a_buffers_chunks_at_its_first_touch() {
    let device = Device::host()
        .lazy_pages(true)
        .ignore_env()
        .build()
        .unwrap();
    assert!(device.memory_report().virtual_memory.is_some(), "arenas");
    let s = device.default_stream();
    let big = s.reserve(64 * MIB).unwrap();
    assert_eq!(
        device.stats().reserved_bytes.current,
        0,
        "nothing mapped yet"
    );
    assert_eq!(device.budget().charged(), 0);
    s.write(&big, &[1]).unwrap();
    assert_eq!(device.stats().reserved_bytes.current, 64 * MIB);
    assert_eq!(device.budget().charged(), 64 * MIB);
}

#[test]
fn extreme_sizes_are_typed_errors_or_empty_buffers_never_panics() {
    let device = Device::host()
        .budget(Budget::Bytes(MIB))
        .ignore_env()
        .build()
        .unwrap();
    let s = device.default_stream();
    let empty = s.reserve(0).unwrap();
    assert_eq!(empty.size(), 0);
    for size in [u64::MAX, u64::MAX - 255, u64::MAX / 2, 2 * MIB] {
        let err = s.reserve(size).unwrap_err();
        assert!(matches!(err, GpuMemError::Pool(_)), "{size}: {err}");
    }
    assert_eq!(
        device.stats().num_alloc_retries,
        0,
        "none of them is retried"
    );
    assert_eq!(device.stats().allocation_count.current, 1);
}
