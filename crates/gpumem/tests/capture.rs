//! The memory side of graph capture through the facade's type-state.

mod common;

use common::*;
use gpumem::pools::IoError;
use gpumem::prelude::*;

/// One "pass": three buffers, a transient one dropped mid-pass.
fn pass(s: &Stream) -> Vec<ManagedMemoryHandle> {
    let a = s.reserve(64 * KIB).unwrap();
    let t = s.reserve(32 * KIB).unwrap();
    drop(t);
    let b = s.reserve(16 * KIB).unwrap();
    vec![a, b]
}

#[test]
fn the_recorded_pass_reuses_the_warmup_memory_and_allocates_nothing() {
    let device = host(1);
    let s = device.default_stream();
    let warmup = s.begin_capture().unwrap();
    drop(pass(warmup.stream()));
    let recording = warmup.start_recording();
    let allocs = device.stats().storage_allocs;
    let outputs = pass(recording.stream());
    assert_eq!(
        device.stats().storage_allocs,
        allocs,
        "no storage allocation"
    );
    let graph = recording.end();
    assert_eq!(graph.stream(), 0);
    assert!(graph.len() >= 2, "every touched slice is pinned");
    assert!(graph.bytes() >= 80 * KIB);
    drop(outputs);
    assert!(!device.memory_report().streams[0].recording);
}

#[test]
fn an_allocation_the_warmup_did_not_prepare_fails_with_its_size() {
    let device = host(1);
    let s = device.default_stream();
    let warmup = s.begin_capture().unwrap();
    drop(warmup.stream().reserve(KIB).unwrap());
    let recording = warmup.start_recording();
    let err = recording.stream().reserve(4 * MIB).unwrap_err();
    assert!(
        matches!(err, GpuMemError::Pool(IoError::CaptureWouldAllocate { size, .. }) if size == 4 * MIB),
        "{err}"
    );
    assert_eq!(
        device.stats().num_alloc_retries,
        0,
        "never retried inside a capture"
    );
    recording.abort();
}

#[test]
fn only_one_stream_records_at_a_time() {
    let device = host(2);
    let warmup = device.stream(0).unwrap().begin_capture().unwrap();
    let err = device.stream(1).unwrap().begin_capture().unwrap_err();
    assert!(
        matches!(err, GpuMemError::Recording { stream: 0, .. }),
        "{err}"
    );
    drop(warmup);
    let again = device.stream(1).unwrap().begin_capture().unwrap();
    again.abort();
}

#[test]
fn an_aborted_capture_leaves_the_stream_as_it_was() {
    let device = host(1);
    let s = device.default_stream();
    let before = s.with_memory(|mm| mm.effective_mode());
    let warmup = s.begin_capture().unwrap();
    let x = warmup.stream().reserve(4 * KIB).unwrap();
    let recording = warmup.start_recording();
    drop(recording);
    assert_eq!(s.with_memory(|mm| mm.effective_mode()), before);
    assert!(!s.with_memory(|mm| mm.capture_state().active));
    assert!(x.can_mut(), "the aborted capture holds nothing");
    drop(x);
    s.cleanup();
    assert_eq!(device.stats().reserved_bytes.current, 0);
}

#[test]
fn a_capture_relocates_outdated_memory_before_its_warmup() {
    let device = Device::host()
        .pools(growable())
        .ignore_env()
        .build()
        .unwrap();
    let s = device.default_stream();
    let old = s.reserve(10 * KIB).unwrap();
    s.write(&old, &pattern(8, 10 * KIB as usize)).unwrap();
    let _big = s.reserve(100 * KIB).unwrap();
    assert!(s.with_memory(|mm| mm.has_outdated()));
    let warmup = s.begin_capture().unwrap();
    assert!(!s.with_memory(|mm| mm.has_outdated()));
    assert_eq!(
        read(&s, &old, 10 * KIB as usize),
        pattern(8, 10 * KIB as usize)
    );
    drop(warmup);
}

#[test]
fn graph_memory_released_when_the_graph_is_dropped() {
    let device = host(1);
    let s = device.default_stream();
    let warmup = s.begin_capture().unwrap();
    drop(pass(warmup.stream()));
    let recording = warmup.start_recording();
    drop(pass(recording.stream()));
    let graph = recording.end();
    s.cleanup();
    assert!(
        device.stats().allocation_count.current >= 2,
        "pinned by the graph"
    );
    drop(graph);
    s.cleanup();
    assert_eq!(device.stats().allocation_count.current, 0);
    assert_eq!(device.stats().reserved_bytes.current, 0);
}
