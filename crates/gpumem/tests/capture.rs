//! Graph capture through the facade's type-state, delegated to mem-capture.

mod common;

use common::*;
use gpumem::capture::CaptureError;
use gpumem::pools::IoError;
use gpumem::prelude::*;
use gpumem::relocate::RelocationError;

/// One pass: an output, a transient dropped mid-pass.
fn pass(s: &Stream) -> ManagedMemoryHandle {
    let out = s.reserve(64 * KIB).unwrap();
    drop(s.reserve(32 * KIB).unwrap());
    out
}

#[test]
fn the_recorded_pass_reuses_the_warmup_memory_and_replays_its_work() {
    let device = host(1);
    let s = device.default_stream();
    let warmup = s.begin_capture().unwrap();
    drop(pass(warmup.stream()));
    let mut recording = warmup.start_recording().unwrap();
    let allocs = device.stats().storage_allocs;
    let out = pass(recording.stream());
    let view = s.view(&out).unwrap();
    recording.recorder().fill(0, view, 0x42).unwrap();
    assert_eq!(
        device.stats().storage_allocs,
        allocs,
        "no storage allocation"
    );
    let mut graph = recording.end().unwrap();
    assert!(graph.pinned_slices() >= 1);
    assert!(!device.memory_report().streams[0].recording);
    assert_eq!(
        read(&s, &out, 4),
        vec![0; 4],
        "recording does not run the work"
    );
    graph.replay().unwrap();
    assert_eq!(read(&s, &out, 4), vec![0x42; 4]);
    drop(out);
    graph.replay().unwrap();
}

#[test]
fn an_allocation_the_warmup_did_not_prepare_fails_with_its_size() {
    let device = host(1);
    let s = device.default_stream();
    let warmup = s.begin_capture().unwrap();
    drop(warmup.stream().reserve(KIB).unwrap());
    let recording = warmup.start_recording().unwrap();
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
fn on_arenas_two_streams_capture_at_once() {
    // Arenas never leave memory outdated, so the second capture's
    // relocation has nothing to move and the first recording is no reason
    // to refuse it.
    let device = host(2);
    let first = device.stream(0).unwrap().begin_capture().unwrap();
    let second = device.stream(1).unwrap().begin_capture().unwrap();
    drop(pass(first.stream()));
    drop(pass(second.stream()));
    let mut first = first.start_recording().unwrap();
    let mut second = second.start_recording().unwrap();
    let report = device.memory_report();
    assert!(report.streams[0].recording && report.streams[1].recording);
    let mut outs = Vec::new();
    for (value, recording) in [(1, &mut first), (2, &mut second)] {
        let out = pass(recording.stream());
        let view = recording.stream().view(&out).unwrap();
        recording.recorder().fill(0, view, value).unwrap();
        outs.push(out);
    }
    let (mut a, mut b) = (first.end().unwrap(), second.end().unwrap());
    assert!(!device.memory_report().streams[0].recording);
    assert!(!device.memory_report().streams[1].recording);
    a.replay().unwrap();
    b.replay().unwrap();
    let s = [device.stream(0).unwrap(), device.stream(1).unwrap()];
    assert_eq!(read(&s[0], &outs[0], 4), vec![1; 4]);
    assert_eq!(read(&s[1], &outs[1], 4), vec![2; 4]);
}

#[test]
fn a_second_capture_is_refused_while_paged_memory_is_outdated() {
    let device = Device::host()
        .pools(growable())
        .streams(2)
        .ignore_env()
        .build()
        .unwrap();
    let (s0, s1) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let warmup = s0.begin_capture().unwrap();
    // Stream 1 grows past its 64 KiB pages and leaves one outdated, which a
    // capture's relocation would move, and cannot under a recording.
    let _old = s1.reserve(10 * KIB).unwrap();
    let _big = s1.reserve(100 * KIB).unwrap();
    assert!(s1.with_memory(|mm| mm.has_outdated()));
    let err = s1.begin_capture().unwrap_err();
    assert!(
        matches!(
            err,
            GpuMemError::Capture(CaptureError::Streams(RelocationError::Recording {
                recording: 1
            }))
        ),
        "{err}"
    );
    drop(warmup);
    let again = s1.begin_capture().unwrap();
    assert!(
        !s1.with_memory(|mm| mm.has_outdated()),
        "alone, the capture relocates first"
    );
    again.abort();
}

#[test]
fn an_aborted_capture_leaves_the_stream_as_it_was() {
    let device = host(1);
    let s = device.default_stream();
    let before = s.with_memory(|mm| mm.effective_mode());
    let warmup = s.begin_capture().unwrap();
    let x = warmup.stream().reserve(4 * KIB).unwrap();
    let recording = warmup.start_recording().unwrap();
    drop(recording);
    assert_eq!(s.with_memory(|mm| mm.effective_mode()), before);
    assert!(!s.with_memory(|mm| mm.capture_state().active));
    assert!(!device.memory_report().streams[0].recording);
    assert!(x.can_mut(), "the aborted capture holds nothing");
    drop(x);
    s.cleanup();
    assert_eq!(device.stats().reserved_bytes.current, 0);
}

#[test]
fn an_empty_recording_is_refused_and_aborts() {
    let device = host(1);
    let s = device.default_stream();
    let warmup = s.begin_capture().unwrap();
    let recording = warmup.start_recording().unwrap();
    let err = recording.end().unwrap_err();
    assert!(
        matches!(err, GpuMemError::Capture(CaptureError::EmptyGraph)),
        "{err}"
    );
    assert!(!device.memory_report().streams[0].recording);
    s.begin_capture().unwrap().abort();
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
fn graph_memory_is_released_when_the_graph_is_dropped() {
    let device = host(1);
    let s = device.default_stream();
    let warmup = s.begin_capture().unwrap();
    drop(pass(warmup.stream()));
    let mut recording = warmup.start_recording().unwrap();
    let out = pass(recording.stream());
    let view = s.view(&out).unwrap();
    recording.recorder().fill(0, view, 1).unwrap();
    drop(out);
    let graph = recording.end().unwrap();
    s.cleanup();
    assert!(
        device.stats().allocation_count.current >= 1,
        "pinned by the graph"
    );
    drop(graph);
    s.cleanup();
    assert_eq!(device.stats().allocation_count.current, 0);
    assert_eq!(device.stats().reserved_bytes.current, 0);
}

#[test]
fn a_used_buffer_freed_after_capture_invalidates_the_graph() {
    let device = host(1);
    let s = device.default_stream();
    let weights = s.reserve(4 * KIB).unwrap();
    let warmup = s.begin_capture().unwrap();
    let mut recording = warmup.start_recording().unwrap();
    recording.uses(&weights).unwrap();
    let view = s.view(&weights).unwrap();
    recording.recorder().fill(0, view, 9).unwrap();
    let mut graph = recording.end().unwrap();
    graph.replay().unwrap();
    assert_eq!(read(&s, &weights, 4), vec![9; 4]);
    drop(weights);
    let err = graph.replay().unwrap_err();
    assert!(
        matches!(
            err,
            GpuMemError::Capture(CaptureError::GraphMemoryInvalidated { .. })
        ),
        "{err}"
    );
}
