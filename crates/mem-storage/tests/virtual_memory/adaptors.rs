//! The adaptors see every create, map, unmap and release, and forward
//! everything else: the whole suite passes through a stack of all four.

use std::sync::Arc;

use mem_storage::{
    FaultInjection, LoggingResource, SimulatedVirtualMemory, StatsResource, StorageError,
    TrackingResource, VirtualMemory, VmAction,
};

use crate::{GIB, MIB, bytes, small_host, suite};

#[test]
fn every_adaptor_stack_passes_the_suite_over_the_simulated_device() {
    let stack = LoggingResource::new(StatsResource::new(TrackingResource::new(
        FaultInjection::new(SimulatedVirtualMemory::new(8 * GIB)),
    )));
    suite::run(&stack);
    let stats = stack.inner().virtual_stats();
    let backend = stack.vm_stats();
    assert_eq!(stats, backend, "the adaptor counted what the backend did");
    assert!(stats.maps >= 9 && stats.refused_calls >= 30, "{stats:?}");
    let tracking = stack.inner().inner();
    assert!(tracking.virtual_leak_report().is_empty());
    assert_eq!(tracking.inner().injected(), 0);
    let events = stack.vm_events();
    let refused = events.iter().filter(|e| e.refused).count() as u64;
    assert_eq!(refused, stats.refused_calls);
    let maps = events
        .iter()
        .filter(|e| e.action == VmAction::Map && !e.refused)
        .count();
    assert_eq!(maps as u64, stats.maps);
}

#[test]
#[cfg_attr(miri, ignore)]
fn every_adaptor_stack_over_host_memory_keeps_the_bytes() {
    let stack = TrackingResource::new(StatsResource::new(LoggingResource::new(
        FaultInjection::new(small_host()),
    )));
    suite::run(&stack);
    bytes::run(&stack);
    assert!(stack.virtual_leak_report().is_empty());
    let shared: Arc<dyn VirtualMemory> = Arc::new(stack);
    suite::run(&shared);
}

#[test]
fn the_log_records_each_lifecycle_call_with_its_ids_in_order() {
    let log = LoggingResource::new(SimulatedVirtualMemory::new(GIB));
    let g = log.granularity();
    let range = log.reserve_range(4 * g).unwrap();
    let chunk = log.create_chunk(g).unwrap();
    let at = log.map(range.id, g, chunk).unwrap();
    assert!(log.release_chunk(chunk).is_err());
    log.unmap(range.id, g, g).unwrap();
    log.release_chunk(chunk).unwrap();
    log.free_range(range.id).unwrap();
    let events = log.drain_vm_events();
    let actions: Vec<_> = events.iter().map(|e| (e.action, e.refused)).collect();
    use VmAction::*;
    assert_eq!(
        actions,
        [
            (ReserveRange, false),
            (CreateChunk, false),
            (Map, false),
            (ReleaseChunk, true),
            (Unmap, false),
            (ReleaseChunk, false),
            (FreeRange, false)
        ]
    );
    assert_eq!(
        (events[0].range, events[0].ptr, events[0].bytes),
        (Some(range.id), range.base.0, 4 * g)
    );
    assert_eq!(
        (events[2].chunk, events[2].offset, events[2].ptr),
        (Some(chunk), g, at.0)
    );
    assert_eq!(events[4].chunk, Some(chunk));
    assert!(events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    assert!(log.vm_events().is_empty(), "drained");
    assert!(
        log.events().is_empty(),
        "no allocation events from virtual memory"
    );
}

#[test]
fn tracking_reports_what_is_still_held_and_where_it_is_mapped() {
    let tracked = TrackingResource::with_backtraces(SimulatedVirtualMemory::new(GIB));
    let g = tracked.granularity();
    let range = tracked.reserve_range(2 * g).unwrap();
    let (a, b) = (
        tracked.create_chunk(g).unwrap(),
        tracked.create_chunk(g).unwrap(),
    );
    tracked.map(range.id, g, b).unwrap();
    let report = tracked.virtual_leak_report();
    assert_eq!(report.ranges.len(), 1);
    let chunks: Vec<_> = report
        .chunks
        .iter()
        .map(|c| (c.chunk, c.mapped_at))
        .collect();
    assert_eq!(chunks, [(a, None), (b, Some((range.id, g)))]);
    assert!(report.chunks[0].backtrace.is_some());
    let text = report.to_string();
    assert!(
        text.contains(&format!("mapped at offset {g} of {}", range.id)),
        "{text}"
    );
    // A refused free leaves everything outstanding.
    assert!(matches!(
        tracked.free_range(range.id),
        Err(StorageError::RangeInUse { .. })
    ));
    assert_eq!(tracked.virtual_leak_report().ranges.len(), 1);
    assert_eq!(tracked.unmap(range.id, g, g).unwrap(), [b]);
    assert_eq!(tracked.virtual_leak_report().chunks[1].mapped_at, None);
    for c in [a, b] {
        tracked.release_chunk(c).unwrap();
    }
    tracked.free_range(range.id).unwrap();
    assert!(tracked.virtual_leak_report().is_empty());
}

#[test]
fn stats_peaks_follow_physical_and_mapped_bytes_and_reset_to_the_level() {
    let stats = StatsResource::new(SimulatedVirtualMemory::new(64 * MIB));
    let g = stats.granularity();
    let range = stats.reserve_range(8 * g).unwrap();
    let chunks: Vec<_> = (0..4).map(|_| stats.create_chunk(g).unwrap()).collect();
    for (i, &c) in chunks.iter().enumerate() {
        stats.map(range.id, i as u64 * g, c).unwrap();
    }
    stats.unmap(range.id, 0, 4 * g).unwrap();
    stats.release_chunk(chunks[0]).unwrap();
    let s = stats.virtual_stats();
    assert_eq!(
        (s.maps, s.unmaps, s.mapped_bytes, s.peak_mapped_bytes),
        (4, 4, 0, 4 * g)
    );
    assert_eq!((s.physical_bytes, s.peak_physical_bytes), (3 * g, 4 * g));
    stats.reset_virtual_peaks();
    let s = stats.virtual_stats();
    assert_eq!((s.peak_physical_bytes, s.peak_mapped_bytes), (3 * g, 0));
    for &c in &chunks[1..] {
        stats.release_chunk(c).unwrap();
    }
    stats.free_range(range.id).unwrap();
    assert!(stats.virtual_stats().is_idle());
    // The backend's own peaks were not reset: `vm_stats` is the backend's.
    assert_eq!(stats.vm_stats().peak_physical_bytes, 4 * g);
}
