//! Out of memory at a lazy buffer's first touch: the same one retry after
//! giving cached memory back, then the same report, as `Stream::reserve`.

use gpumem::error::{OutOfMemoryReport, Refuser};
use gpumem::prelude::*;

/// A host device with lazy pages: arenas (`PoolLayout::Arenas`, chunks
/// mapped at first touch) or paged pools (a page allocated at first touch).
fn lazy(budget: u64, streams: usize, layout: PoolLayout) -> Device {
    Device::host()
        .budget(Budget::Bytes(budget))
        .streams(streams)
        .pools(layout)
        .lazy_pages(true)
        .ignore_env()
        .build()
        .unwrap()
}

fn report(err: GpuMemError) -> OutOfMemoryReport {
    match err {
        GpuMemError::OutOfMemory(report) => *report,
        other => panic!("expected out of memory, got {other}"),
    }
}

/// Stream 1 touches `bytes` of a lazy buffer and drops it: its memory stays
/// cached on stream 1, charged to the budget.
fn cache_on_stream_1(device: &Device, bytes: u64) {
    let s1 = device.stream(1).unwrap();
    let old = s1.reserve(bytes).unwrap();
    s1.write(&old, &[7]).unwrap();
    drop(old);
    s1.with_memory(|_| ()); // the drop is processed; the memory stays cached
    assert_eq!(
        device.budget().charged(),
        bytes,
        "stream 1 caches what it touched"
    );
}

#[test]
fn a_lazy_arena_buffers_first_touch_frees_another_streams_cached_chunks_and_succeeds() {
    let device = lazy(4 * MIB, 2, PoolLayout::Arenas);
    assert!(device.memory_report().virtual_memory.is_some(), "arenas");
    cache_on_stream_1(&device, 4 * MIB);
    let s0 = device.default_stream();
    let buffer = s0.reserve(4 * MIB).unwrap();
    assert_eq!(
        device.stats().num_alloc_retries,
        0,
        "reserving maps nothing"
    );
    s0.write(&buffer, &[1, 2, 3])
        .expect("the retry gives stream 1's cached chunks back");
    let mut back = [0; 3];
    s0.read(&buffer, &mut back).unwrap();
    assert_eq!(back, [1, 2, 3]);
    let stats = device.stats();
    assert_eq!((stats.num_alloc_retries, stats.num_ooms), (1, 0));
    assert_eq!(device.stream(1).unwrap().stats().reserved_bytes.current, 0);
    assert_eq!(device.budget().charged(), 4 * MIB);
}

#[test]
fn a_lazy_pages_first_view_frees_another_streams_cached_page_and_succeeds() {
    let device = lazy(MIB, 2, PoolLayout::SubSlices);
    cache_on_stream_1(&device, MIB);
    let s0 = device.default_stream();
    let buffer = s0.reserve(MIB).unwrap();
    let view = s0
        .view(&buffer)
        .expect("the retry gives stream 1's cached page back");
    assert_eq!(view.size(), MIB);
    assert_eq!(device.stats().num_alloc_retries, 1);
    assert_eq!(device.budget().charged(), MIB);
}

#[test]
fn a_lazy_arena_buffer_the_budget_cannot_back_is_an_out_of_memory_report() {
    let device = lazy(4 * MIB, 1, PoolLayout::Arenas);
    assert!(device.memory_report().virtual_memory.is_some(), "arenas");
    let s = device.default_stream();
    let live = s.reserve(2 * MIB).unwrap();
    s.write(&live, &[1]).unwrap();
    let buffer = s.reserve(4 * MIB).expect("a lazy reservation maps nothing");
    let err = s.write(&buffer, &[1]).unwrap_err();
    assert!(err.is_out_of_memory(), "{err}");
    let r = report(err);
    assert_eq!(r.refused_by, Refuser::DeviceBudget);
    assert_eq!(r.stream, 0);
    assert!(
        r.requested > 0 && r.requested <= 4 * MIB,
        "the bytes the map asked for: {}",
        r.requested
    );
    assert_eq!(r.budget_limit, Some(4 * MIB));
    assert!(
        r.to_string().contains("Refused by the device budget"),
        "{r}"
    );
    let stats = device.stats();
    assert_eq!((stats.num_alloc_retries, stats.num_ooms), (1, 1));
    let mut byte = [0];
    s.read(&live, &mut byte).unwrap();
    assert_eq!(byte, [1], "the live buffer is untouched");
    drop(buffer);
    s.cleanup();
    assert_eq!(
        device.budget().charged(),
        2 * MIB,
        "nothing stays charged for the refused buffer"
    );
}

#[test]
fn a_lazy_buffers_device_pointer_gets_the_same_retry() {
    let device = lazy(4 * MIB, 2, PoolLayout::Arenas);
    assert!(device.memory_report().virtual_memory.is_some(), "arenas");
    cache_on_stream_1(&device, 4 * MIB);
    let s0 = device.default_stream();
    let buffer = s0.reserve(4 * MIB).unwrap();
    let ptr = s0
        .device_ptr(&buffer)
        .expect("the retry gives stream 1's cached chunks back");
    assert_eq!(ptr.len(), 4 * MIB);
    assert_eq!(device.stats().num_alloc_retries, 1);
}

#[test]
fn is_out_of_memory_sees_through_every_layer_and_nothing_else() {
    use gpumem::pools::IoError;
    use gpumem::storage::StorageError;
    let oom = StorageError::OutOfMemory {
        backend: "host",
        refused_by: Refuser::Device,
        requested: 2,
        free: 1,
        total: 1,
    };
    let pool = IoError::Storage(oom.clone());
    assert!(pool.is_out_of_memory());
    assert!(GpuMemError::from(pool.clone()).is_out_of_memory());
    assert!(GpuMemError::from(oom.clone()).is_out_of_memory());
    assert!(gpumem::capture::CaptureError::from(pool.clone()).is_out_of_memory());
    assert!(gpumem::relocate::RelocationError::from(pool).is_out_of_memory());
    let copy = gpumem::pools::RelocationCopyError::Copy {
        enqueued: 0,
        moves: 1,
        source: oom.clone(),
    };
    let copy = GpuMemError::from(copy);
    assert!(
        matches!(
            copy,
            GpuMemError::Relocation(gpumem::relocate::RelocationError::Copy(_))
        ),
        "one variant for a failed copy: {copy:?}"
    );
    assert!(copy.is_out_of_memory());
    let not = IoError::BufferTooBig { size: 2, max: 1 };
    assert!(!not.is_out_of_memory());
    assert!(!GpuMemError::from(not).is_out_of_memory());
    let device = lazy(MIB, 1, PoolLayout::SubSlices);
    let err = device.stream(5).unwrap_err();
    assert!(!err.is_out_of_memory(), "{err}");
}
