//! PyTorch-style statistics: current, peak, totals, reset, fragmentation.

mod common;

use common::*;
use gpumem::prelude::*;

#[test]
fn allocated_requested_and_counts_track_current_peak_and_totals() {
    let device = host(1);
    let s = device.default_stream();
    let a = s.reserve(1000).unwrap(); // 1024 with 256-byte alignment
    let b = s.reserve(3000).unwrap(); // 3072
    let st = s.stats();
    assert_eq!(st.allocated_bytes.current, 4096);
    assert_eq!(st.requested_bytes.current, 4000);
    assert_eq!(st.allocation_count.current, 2);
    drop(a);
    s.cleanup();
    let st = s.stats();
    assert_eq!(st.allocated_bytes.current, 3072);
    assert_eq!(st.allocated_bytes.peak, 4096);
    assert_eq!(st.allocated_bytes.allocated, 4096);
    assert_eq!(st.allocated_bytes.freed, 1024);
    assert_eq!(st.requested_bytes.peak, 4000);
    assert_eq!(st.allocation_count.peak, 2);
    assert_eq!(st.active_bytes.current, 3072);
    drop(b);
}

#[test]
fn reset_peak_stats_lowers_peaks_to_the_current_level_not_zero() {
    let device = host(1);
    let s = device.default_stream();
    let keep = s.reserve(2048).unwrap();
    drop(s.reserve(8192).unwrap());
    s.cleanup();
    assert_eq!(device.stats().allocated_bytes.peak, 2048 + 8192);
    device.reset_peak_stats();
    assert_eq!(device.stats().allocated_bytes.peak, 2048);
    assert_eq!(s.stats().allocated_bytes.peak, 2048);
    assert_eq!(
        device.stats().allocated_bytes.allocated,
        2048 + 8192,
        "totals are kept"
    );
    drop(keep);
}

#[test]
fn a_peak_reset_counts_a_handle_dropped_on_another_thread_freed() {
    let device = host(2);
    let s = device.default_stream();
    let keep = s.reserve(2048).unwrap();
    let dropped = s.reserve(8192).unwrap();
    std::thread::spawn(move || drop(dropped)).join().unwrap();
    s.reset_peak_stats(); // no drain or cleanup first
    assert_eq!(s.stats().allocated_bytes.peak, 2048);
    let other = device.stream(1).unwrap().reserve(4096).unwrap();
    std::thread::spawn(move || drop(other)).join().unwrap();
    device.reset_peak_stats();
    assert_eq!(device.stats().allocated_bytes.peak, 2048);
    drop(keep);
}

#[test]
fn a_stream_peak_reset_leaves_the_device_peak_where_it_was() {
    for streams in [1, 2] {
        let device = host(streams);
        let s = device.default_stream();
        let keep = s.reserve(2048).unwrap();
        drop(s.reserve(8192).unwrap());
        s.cleanup(); // processes the drop
        s.reset_peak_stats();
        let (stream, dev) = (s.stats(), device.stats());
        assert_eq!(stream.allocated_bytes.peak, 2048, "{streams} streams");
        assert_eq!(stream.allocation_count.peak, 1, "{streams} streams");
        assert_eq!(dev.allocated_bytes.peak, 2048 + 8192, "{streams} streams");
        assert_eq!(dev.allocation_count.peak, 2, "{streams} streams");
        drop(s.reserve(4096).unwrap());
        assert_eq!(s.stats().allocated_bytes.peak, 2048 + 4096);
        assert_eq!(device.stats().allocated_bytes.peak, 2048 + 8192);
        drop(keep);
    }
}

#[test]
fn stream_peaks_span_every_call_on_a_device_with_several_streams() {
    let device = host(2);
    let (s0, s1) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    drop(s0.reserve(8192).unwrap());
    // Calls after the peak (each resets the engine's peaks on a device with
    // several streams) leave the stream's peak where it was.
    for _ in 0..3 {
        drop(s0.reserve(1024).unwrap());
        drop(s1.reserve(1024).unwrap());
    }
    let st = s0.stats();
    assert_eq!(st.allocated_bytes.peak, 8192);
    assert_eq!(st.allocated_bytes.current, 0);
    assert_eq!(st.allocated_bytes.allocated, 8192 + 3 * 1024);
    assert_eq!(device.stats().allocated_bytes.peak, 8192);
}

#[test]
fn the_device_peak_is_what_was_held_at_once_not_the_sum_of_stream_peaks() {
    let device = host(2);
    let (s0, s1) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    drop(s0.reserve(MIB).unwrap());
    s0.cleanup();
    let x = s1.reserve(MIB).unwrap();
    assert_eq!(s0.stats().allocated_bytes.peak, MIB);
    assert_eq!(s1.stats().allocated_bytes.peak, MIB);
    assert_eq!(device.stats().allocated_bytes.peak, MIB);
    let y = s0.reserve(MIB).unwrap();
    assert_eq!(device.stats().allocated_bytes.peak, 2 * MIB);
    assert_eq!(device.stats().allocated_bytes.current, 2 * MIB);
    drop((x, y));
}

#[test]
fn inactive_bytes_are_reserved_minus_allocated() {
    let device = host(1);
    let s = device.default_stream();
    let x = s.reserve(10 * KIB).unwrap();
    let st = device.stats();
    assert_eq!(
        st.inactive_bytes.current,
        st.reserved_bytes.current - st.allocated_bytes.current
    );
    assert!(
        st.inactive_bytes.current > 0,
        "the rest of the page is cached"
    );
    drop(x);
    s.cleanup();
    let st = device.stats();
    assert_eq!(st.reserved_bytes.current, 0);
    assert_eq!(st.inactive_bytes.current, 0);
    assert!(st.inactive_bytes.peak > 0 && st.inactive_bytes.freed > 0);
}

#[test]
fn storage_allocations_and_frees_are_counted() {
    let device = host(1);
    let s = device.default_stream();
    let x = s.reserve(100).unwrap();
    let y = s.reserve(100).unwrap();
    assert_eq!(device.stats().storage_allocs, 1, "one page serves both");
    drop((x, y));
    s.cleanup();
    assert_eq!(device.stats().storage_frees, 1);
}

#[test]
fn fragmentation_compares_the_largest_free_block_with_all_free_bytes() {
    let device = Device::host()
        .pools(PoolLayout::Sliced {
            page_size: 64 * KIB,
            max_slice: 64 * KIB,
        })
        .ignore_env()
        .build()
        .unwrap();
    let s = device.default_stream();
    let blocks: Vec<_> = (0..16).map(|_| s.reserve(4 * KIB).unwrap()).collect();
    let frag = device.stats().fragmentation();
    assert_eq!(frag.free_bytes, 0);
    assert_eq!(frag.largest_free_ratio, 1.0);
    // Free every other block: 8 holes of 4 KiB, none adjacent.
    let kept: Vec<_> = blocks.into_iter().step_by(2).collect();
    s.cleanup();
    let frag = device.stats().fragmentation();
    assert_eq!(frag.free_bytes, 32 * KIB);
    assert_eq!(frag.largest_free_block, 4 * KIB);
    assert!((frag.largest_free_ratio - 0.125).abs() < 1e-9);
    assert_eq!(frag.unused_bytes, frag.reserved_bytes - frag.live_bytes);
    drop(kept);
}

#[test]
fn the_report_prints_the_statistics_and_every_stream() {
    let device = host(2);
    let x = device.stream(1).unwrap().reserve(5000).unwrap();
    let report = device.memory_report();
    assert_eq!(report.streams.len(), 2);
    assert_eq!(report.stats.requested_bytes.current, 5000);
    assert_eq!(report.streams[1].stats.requested_bytes.current, 5000);
    let text = report.to_string();
    for needle in [
        "device host:0",
        "allocated",
        "inactive",
        "fragmentation",
        "stream 1",
    ] {
        assert!(text.contains(needle), "{needle} missing from\n{text}");
    }
    drop(x);
}
