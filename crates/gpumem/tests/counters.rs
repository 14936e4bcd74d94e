//! Counters are current: a handle dropped before a read, on any thread, is
//! counted freed by that read — as with CubeCL's engine, where a dropped
//! handle's slice is free at once.

mod common;

use common::*;

#[test]
fn dropping_the_last_handle_shows_freed_in_the_next_stats_read() {
    let device = host(2);
    let s = device.stream(1).unwrap();
    let a = s.reserve(4096).unwrap();
    assert_eq!(s.stats().allocated_bytes.current, 4096);
    drop(a);
    assert_eq!(s.stats().allocated_bytes.current, 0, "stream stats");
    assert_eq!(device.stats().allocated_bytes.current, 0, "device stats");
    let report = device.memory_report();
    assert_eq!(report.streams[1].stats.allocated_bytes.current, 0);
}

#[test]
fn a_handle_dropped_on_another_thread_is_counted_by_the_next_report() {
    let device = host(1);
    let s = device.default_stream();
    let a = s.reserve(1 << 20).unwrap();
    std::thread::spawn(move || drop(a)).join().unwrap();
    let live: u64 = s.memory_report().pools.iter().map(|p| p.slices).sum();
    assert_eq!(live, 0, "the per-pool report saw the drop");
    assert_eq!(device.stats().allocation_count.current, 0);
}

#[test]
fn a_handle_dropped_after_a_capture_ends_is_freed_without_another_engine_call() {
    let device = host(1);
    let s = device.default_stream();
    let warmup = s.begin_capture().unwrap();
    drop(warmup.stream().reserve(8192).unwrap());
    let mut recording = warmup.start_recording().unwrap();
    let out = recording.stream().reserve(8192).unwrap();
    let view = s.view(&out).unwrap();
    recording.recorder().fill(0, view, 0x42).unwrap();
    let graph = recording.end().unwrap();
    let before = device.stats().allocated_bytes.current;
    drop(out);
    drop(graph);
    let after = device.stats().allocated_bytes.current;
    assert!(after < before, "allocated {before} -> {after}");
}

#[test]
fn memory_usage_read_through_with_memory_counts_a_handle_just_dropped() {
    let device = host(1);
    let s = device.default_stream();
    let a = s.reserve(4096).unwrap();
    drop(a);
    let usage = s.with_memory(|m| m.memory_usage());
    assert_eq!((usage.number_allocs, usage.bytes_in_use), (0, 0));
}
