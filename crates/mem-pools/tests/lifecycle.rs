//! Modes, cleanup, install_pools, lazy pages, reports.

mod common;

use common::*;
use mem_pools::{
    InstallMemoryPoolsError, IoError, MemoryAllocationMode, MemoryConfiguration, PoolReportKind,
};
use mem_storage::ComputeStorage;

#[test]
fn an_inner_auto_does_not_end_an_outer_persistent_window() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.mode(MemoryAllocationMode::Persistent);
    mm.mode(MemoryAllocationMode::Persistent);
    mm.mode(MemoryAllocationMode::Auto);
    let weight = mm.reserve(1000).unwrap();
    let report = mm.memory_report();
    assert_eq!(
        report.pools.last().unwrap().slices,
        1,
        "landed in the persistent pool"
    );
    mm.mode(MemoryAllocationMode::Auto);
    mm.mode(MemoryAllocationMode::Auto); // extra close: no-op
    assert_eq!(mm.effective_mode(), MemoryAllocationMode::Auto);
    drop(weight);
}

#[test]
fn persistent_slices_are_exact_fit_and_reused_by_exact_size() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.mode(MemoryAllocationMode::Persistent);
    let a = mm.reserve(3000).unwrap();
    let view = mm.get_storage(a.binding()).unwrap();
    drop(a);
    let b = mm.reserve(2900).unwrap(); // same aligned size (3072)
    assert_eq!(mm.get_storage(b.binding()).unwrap().id, view.id);
    let c = mm.reserve(4000).unwrap();
    assert_ne!(mm.get_storage(c.binding()).unwrap().id, view.id);
    assert_eq!(
        mm.memory_usage().bytes_padding,
        (3072 - 2900) + (4096 - 4000)
    );
}

#[test]
fn install_pools_over_an_idle_chunk_whose_work_runs_says_pages_are_held_not_in_use() {
    let (_vm, mut mm) = host_arena(4 * MIB, 16 * MIB, None);
    let h = mm.reserve(MIB).unwrap();
    // Work using the slice is queued and not complete when it is freed:
    // its chunk stays mapped, and install's cleanup does not wait for it.
    mm.set_stream_progress(1, 0);
    drop(h);
    let err = mm
        .install_pools(MemoryConfiguration::SubSlices, &props())
        .unwrap_err();
    let InstallMemoryPoolsError::PagesHeld {
        pages,
        reserved_bytes,
    } = err
    else {
        panic!("expected PagesHeld, got {err:?}");
    };
    assert_eq!(pages, 1);
    assert!(reserved_bytes >= MIB, "the chunk under the slice is held");
    assert!(err.to_string().contains("synchronize"), "{err}");
    assert!(!err.is_out_of_memory());
    // The work completes: the same install goes through.
    mm.set_stream_progress(1, 1);
    mm.install_pools(MemoryConfiguration::SubSlices, &props())
        .unwrap();
    assert_eq!(mm.configuration(), &MemoryConfiguration::SubSlices);
}

#[test]
fn install_pools_refuses_while_dynamic_slices_live_and_keeps_the_old_layout() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let h = mm.reserve(3 * MIB).unwrap();
    let err = mm
        .install_pools(MemoryConfiguration::ExclusivePages, &props())
        .unwrap_err();
    assert_eq!(
        err,
        InstallMemoryPoolsError::PoolsInUse {
            live_slices: 1,
            live_bytes: 3 * MIB
        }
    );
    assert_eq!(mm.configuration(), &MemoryConfiguration::SubSlices);
    assert!(mm.read(h.binding(), &mut [0; 8]).is_ok());
    let b = h.binding();
    drop(h);
    mm.install_pools(MemoryConfiguration::ExclusivePages, &props())
        .unwrap();
    assert!(matches!(
        mm.get_storage(b),
        Err(IoError::StaleBinding { .. })
    ));
}

#[test]
fn install_pools_ignores_the_persistent_pool_and_resets_dynamic_high_water_marks() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.mode(MemoryAllocationMode::Persistent);
    let weight = mm.reserve(MIB).unwrap();
    mm.mode(MemoryAllocationMode::Auto);
    drop(mm.reserve(100 * KIB).unwrap());
    assert!(mm.memory_report().pools[1].peak_pages > 0);
    mm.install_pools(MemoryConfiguration::SubSlices, &props())
        .unwrap();
    let report = mm.memory_report();
    assert!(
        report.pools[..report.pools.len() - 1]
            .iter()
            .all(|p| p.peak_pages == 0)
    );
    assert_eq!(report.pools.last().unwrap().slices, 1);
    assert!(mm.read(weight.binding(), &mut [0; 4]).is_ok());
}

#[test]
fn explicit_cleanup_returns_every_empty_page_and_periodic_cleanup_keeps_sliced_pages() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    drop(mm.reserve(1000).unwrap());
    mm.cleanup(false);
    assert!(mm.memory_usage().bytes_reserved > 0);
    mm.cleanup(true);
    assert_eq!(mm.memory_usage().bytes_reserved, 0);
    assert_eq!(mm.storage().bytes_allocated(), 0);
}

#[test]
fn exclusive_pages_idle_for_their_period_are_returned_by_periodic_cleanup() {
    let config = MemoryConfiguration::Custom {
        pool_options: vec![mem_pools::MemoryPoolOptions {
            pool_type: mem_pools::PoolType::ExclusivePages {
                max_alloc_size: MIB,
            },
            dealloc_period: Some(10),
        }],
    };
    let mut mm = manager(config);
    drop(mm.reserve(64 * KIB).unwrap());
    let keep = mm.reserve(1000).unwrap();
    assert_eq!(mm.memory_report().pools[0].pages, 2);
    for _ in 0..20 {
        drop(mm.reserve(100).unwrap());
    }
    mm.cleanup(false);
    assert_eq!(
        mm.memory_report().pools[0].pages,
        2,
        "the 64 KiB page aged out; keep's page and one small page remain"
    );
    drop(keep);
}

#[test]
fn lazy_pages_get_ids_but_no_memory_until_first_dereference() {
    let mut mm = lazy_manager(MemoryConfiguration::SubSlices);
    let h = mm.reserve(10 * MIB).unwrap();
    let report = mm.memory_report();
    assert_eq!(
        report.pools.iter().map(|p| p.pages_unmapped).sum::<u64>(),
        1
    );
    assert!(report.usage.bytes_reserved >= 10 * MIB);
    assert_eq!(mm.storage().bytes_allocated(), 0);
    mm.write(h.binding(), &[7; 16]).unwrap();
    assert_eq!(
        mm.memory_report()
            .pools
            .iter()
            .map(|p| p.pages_unmapped)
            .sum::<u64>(),
        0
    );
    assert!(mm.storage().bytes_allocated() >= 10 * MIB);
}

#[test]
fn a_lazy_replay_larger_than_the_device_costs_nothing() {
    let mut mm = lazy_manager(MemoryConfiguration::SubSlices);
    let handles: Vec<_> = (0..64).map(|_| mm.reserve(16 * MIB).unwrap()).collect();
    assert!(mm.memory_usage().bytes_reserved >= 1 << 30);
    assert_eq!(mm.storage().bytes_allocated(), 0);
    assert_eq!(mm.stats().storage_allocs, 0);
    drop(handles);
}

#[test]
fn the_report_lists_pools_in_routing_order_with_the_persistent_pool_last() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let _a = mm.reserve(100).unwrap();
    let _b = mm.reserve(200 * KIB).unwrap();
    let _c = mm.reserve(40 * MIB).unwrap();
    let report = mm.memory_report();
    // Pages up to 64 MiB: the growable pool takes everything past the
    // small pool's 64 KiB, so SubSlices has no exclusive tail here.
    assert_eq!(report.pools.len(), 3);
    assert!(
        matches!(report.pools[0].kind, PoolReportKind::Sliced { max_slice_size, .. } if max_slice_size == 64 * KIB)
    );
    assert!(
        matches!(report.pools[1].kind, PoolReportKind::Sliced { max_slice_size, .. } if max_slice_size == 64 * MIB)
    );
    assert!(matches!(report.pools[2].kind, PoolReportKind::Persistent));
    assert_eq!(
        report.pools.iter().map(|p| p.slices).collect::<Vec<_>>(),
        vec![1, 2, 0]
    );
    let text = format!("{mm}");
    assert!(
        text.contains("persistent") && text.contains("peak"),
        "{text}"
    );
    assert_eq!(report.usage.bytes_in_use, 100 + 200 * KIB + 40 * MIB);
}

#[test]
fn stats_count_current_peak_and_totals() {
    let mut mm = manager(sliced());
    let a = mm.reserve(1000).unwrap();
    let b = mm.reserve(3000).unwrap();
    drop(a);
    mm.cleanup(false);
    let s = mm.stats();
    assert_eq!(s.requested_bytes.current, 3000);
    assert_eq!(s.requested_bytes.peak, 4000);
    assert_eq!(s.allocation_count.allocated, 2);
    assert_eq!(s.allocated_bytes.current, 3072);
    assert_eq!(s.reserved_bytes.current, MIB);
    assert_eq!(
        s.largest_free_block,
        MIB - 4096,
        "a's freed 1 KiB sits before b, apart from the tail"
    );
    mm.reset_peaks();
    assert_eq!(mm.stats().requested_bytes.peak, 3000);
    drop(b);
}

#[test]
fn install_pools_during_a_capture_is_refused() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.capture_begin();
    assert_eq!(
        mm.install_pools(MemoryConfiguration::ExclusivePages, &props()),
        Err(InstallMemoryPoolsError::CaptureActive)
    );
    let _ = mm.capture_end();
    assert!(
        mm.install_pools(MemoryConfiguration::ExclusivePages, &props())
            .is_ok()
    );
}

#[test]
fn a_lazy_page_cannot_be_mapped_inside_the_capture_window() {
    let mut mm = lazy_manager(MemoryConfiguration::SubSlices);
    let h = mm.reserve(1000).unwrap();
    mm.capture_begin();
    mm.capture_priming_end();
    assert!(matches!(
        mm.get_storage(h.binding()),
        Err(IoError::CaptureWouldAllocate { .. })
    ));
    let _ = mm.capture_end();
    assert!(mm.get_storage(h.binding()).is_ok());
}

#[test]
fn the_measured_plan_cycle_reads_peaks_from_a_lazy_pass() {
    let mut mm = lazy_manager(MemoryConfiguration::SubSlices);
    let pass = |mm: &mut mem_pools::MemoryManagement<mem_storage::HostStorage>| {
        let a: Vec<_> = (0..40).map(|_| mm.reserve(32 * KIB).unwrap()).collect();
        drop(a);
        mm.drain_drops();
    };
    pass(&mut mm);
    let peaks = mm.memory_report().pools[0].peak_bytes_in_use;
    assert_eq!(peaks, 40 * 32 * KIB);
    mm.install_pools(MemoryConfiguration::SubSlices, &props())
        .unwrap();
    assert_eq!(
        mm.memory_report().pools[0].peak_bytes_in_use,
        0,
        "marks reset by install"
    );
    pass(&mut mm);
    assert_eq!(mm.memory_report().pools[0].peak_bytes_in_use, peaks);
    assert_eq!(mm.stats().storage_allocs, 0, "a lazy pass maps nothing");
    mm.print_memory_usage();
}
