//! Arena pools: physical chunks only under live data, on real host bytes.

mod common;

use std::sync::Arc;

use common::*;
use mem_pools::{
    IoError, MemoryConfiguration, MemoryManagement, MemoryManagementOptions, MemoryPoolOptions,
    PoolReportKind, PoolType, ServerLogger,
};
use mem_storage::{
    ComputeStorage, HostResource, HostStorage, HostVirtualMemory, ResourceStorage, VirtualMemory,
};

const G: u64 = 2 * MIB;

fn arena(threshold: u64) -> MemoryConfiguration {
    MemoryConfiguration::Custom {
        pool_options: vec![MemoryPoolOptions {
            pool_type: PoolType::VirtualArena {
                max_slice_size: 64 * MIB,
                range_size: 1 << 30,
                release_threshold: threshold,
            },
            dealloc_period: None,
        }],
    }
}

type Mm = MemoryManagement<ResourceStorage<HostResource>>;

fn arena_manager(threshold: u64) -> (Arc<HostVirtualMemory>, Mm) {
    let vm = Arc::new(HostVirtualMemory::with_capacity(256 * MIB).unwrap());
    let storage = ResourceStorage::new(HostResource::new()).with_virtual_memory(vm.clone());
    let mm = MemoryManagement::from_configuration(
        storage,
        &props(),
        arena(threshold),
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    (vm, mm)
}

#[test]
#[cfg_attr(miri, ignore)]
fn physical_memory_is_mapped_only_under_live_slices() {
    let (vm, mut mm) = arena_manager(0);
    assert_eq!(mm.stats().reserved_bytes.current, 0);
    let a = written(&mut mm, 3 * MIB, 1); // granules 0 and 1
    assert_eq!(mm.stats().reserved_bytes.current, 2 * G);
    let b = written(&mut mm, MIB, 2); // granule 1 (shared) and maybe 2
    let held = mm.stats().reserved_bytes.current;
    assert!(held <= 3 * G, "{held}");
    assert_eq!(vm.vm_stats().mapped_bytes, held);
    assert!(intact(&mut mm, &a, 1) && intact(&mut mm, &b, 2));
    drop(a);
    mm.drain_drops();
    assert!(intact(&mut mm, &b, 2), "b's chunks stayed while a's went");
    assert!(mm.stats().reserved_bytes.current <= 2 * G);
    drop(b);
    mm.cleanup(true);
    assert_eq!(mm.stats().reserved_bytes.current, 0);
    assert_eq!(vm.vm_stats().physical_bytes, 0, "everything released");
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_slice_spanning_many_chunks_keeps_every_byte() {
    let (_vm, mut mm) = arena_manager(0);
    let small = written(&mut mm, 4 * KIB, 3);
    let big = written(&mut mm, 9 * G + 123, 4);
    assert!(intact(&mut mm, &small, 3) && intact(&mut mm, &big, 4));
    assert_eq!(mm.stats().chunks.virtual_bytes, 1 << 30);
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_chunk_freed_in_a_hole_moves_to_where_it_is_needed_before_a_new_one_is_made() {
    let (_vm, mut mm) = arena_manager(0);
    let first = written(&mut mm, G, 1);
    let second = written(&mut mm, G, 2);
    let third = written(&mut mm, G, 3);
    let creates = mm.stats().chunks.creates;
    assert_eq!(creates, 3);
    drop(second); // a hole, its chunk idle (threshold 0: released)
    mm.drain_drops();
    let (vm2, mut cached) = arena_manager(64 * MIB);
    let mut keep: Vec<_> = (0..3).map(|i| written(&mut cached, G, i)).collect();
    drop(keep.remove(1));
    cached.drain_drops();
    let before = cached.stats().chunks;
    // A larger allocation cannot use the 2 MiB hole: it lands past the
    // end and takes the hole's idle chunk for one of its granules.
    let wide = written(&mut cached, 2 * G, 9);
    let after = cached.stats().chunks;
    assert_eq!(after.creates - before.creates, 1, "one new, one moved");
    assert_eq!(after.unmaps - before.unmaps, 1);
    assert_eq!(vm2.vm_stats().physical_bytes, 4 * G);
    assert!(intact(&mut cached, &wide, 9));
    assert!(intact(&mut cached, &keep[0], 0) && intact(&mut cached, &keep[1], 2));
    drop((first, third));
}

#[test]
#[cfg_attr(miri, ignore)]
fn idle_chunks_up_to_the_threshold_serve_the_next_allocation_without_a_driver_call() {
    let (_vm, mut mm) = arena_manager(64 * MIB);
    let warm: Vec<_> = (0..8).map(|i| written(&mut mm, G, i)).collect();
    drop(warm);
    mm.drain_drops();
    let calls = mm.stats().chunks.driver_calls();
    assert_eq!(mm.stats().chunks.cached_bytes, 8 * G);
    for round in 0..100 {
        let again: Vec<_> = (0..8).map(|i| written(&mut mm, G, round + i)).collect();
        drop(again);
    }
    mm.drain_drops();
    assert_eq!(
        mm.stats().chunks.driver_calls(),
        calls,
        "steady state: no calls"
    );
    mm.cleanup(true);
    assert_eq!(mm.stats().chunks.cached_bytes, 0);
    assert_eq!(mm.stats().reserved_bytes.current, 0);
}

#[test]
#[cfg_attr(miri, ignore)]
fn peak_physical_memory_is_the_peak_of_chunks_live_slices_touch() {
    let (vm, mut mm) = arena_manager(256 * MIB);
    let mut live = Vec::new();
    for round in 0..20u64 {
        live.push(written(&mut mm, (round % 5 + 1) * MIB, round));
        if round % 3 == 2 {
            live.remove(0);
        }
    }
    let peak = mm.stats().reserved_bytes.peak;
    let peak_live = mm.stats().allocated_bytes.peak;
    assert!(peak < peak_live + 4 * G, "{peak} vs {peak_live}");
    assert_eq!(vm.vm_stats().peak_mapped_bytes, peak);
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_capture_window_maps_no_chunk() {
    let (_vm, mut mm) = arena_manager(0);
    let warm = written(&mut mm, G, 1);
    mm.capture_begin();
    let inside = mm.reserve(64 * KIB).unwrap(); // granule 0 is mapped
    mm.capture_priming_end();
    let err = mm.reserve(G).unwrap_err();
    assert!(matches!(err, IoError::CaptureWouldAllocate { .. }), "{err}");
    drop((warm, inside));
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_arena_reports_its_range_and_cache() {
    let (_vm, mut mm) = arena_manager(64 * MIB);
    let h = written(&mut mm, 5 * MIB, 1);
    let report = mm.memory_report();
    let pool = &report.pools[0];
    assert!(matches!(
        pool.kind,
        PoolReportKind::Arena {
            range_size: 1073741824,
            ..
        }
    ));
    assert_eq!(pool.bytes_reserved, 3 * G);
    assert_eq!(pool.pages, 1, "one range");
    drop(h);
}

#[test]
fn an_arena_over_storage_without_virtual_memory_is_a_typed_error() {
    let mut mm = MemoryManagement::from_configuration(
        HostStorage::host(),
        &props(),
        arena(0),
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    let err = mm.reserve(4096).unwrap_err();
    assert!(matches!(err, IoError::Storage(_)), "{err}");
    assert_eq!(mm.stats().reserved_bytes.current, 0);
    assert!(mm.storage().chunk_granularity().is_none());
}

#[test]
#[cfg_attr(miri, ignore)]
fn sleep_gives_every_chunk_back_and_wake_restores_bytes_at_the_same_addresses() {
    use mem_pools::SleepContents;
    let (vm, mut mm) = arena_manager(64 * MIB);
    let a = written(&mut mm, 3 * MIB, 1);
    let b = written(&mut mm, 5 * MIB + 17, 2);
    let gone = written(&mut mm, G, 3);
    drop(gone); // a cached chunk too
    mm.drain_drops();
    let (view_a, view_b) = (
        mm.get_storage(a.binding()).unwrap(),
        mm.get_storage(b.binding()).unwrap(),
    );
    let before = mm.stats().reserved_bytes.current;
    let report = mm.sleep(SleepContents::Preserve).unwrap();
    assert_eq!(report.released_bytes, before);
    assert!(report.preserved_bytes >= 8 * MIB && report.preserved_bytes < before);
    assert!(mm.is_asleep());
    assert_eq!(mm.stats().reserved_bytes.current, 0);
    assert_eq!(vm.vm_stats().physical_bytes, 0, "every chunk went back");
    let mut probe = [0u8; 8];
    assert!(
        mm.read(a.binding(), &mut probe).is_err(),
        "unmapped, a typed error"
    );
    assert!(matches!(mm.reserve(64), Err(IoError::Asleep { .. })));
    assert!(matches!(
        mm.sleep(SleepContents::Discard),
        Err(IoError::Asleep { .. })
    ));
    let mapped = mm.wake().unwrap();
    assert_eq!(mapped, report.preserved_bytes);
    assert!(!mm.is_asleep());
    assert_eq!(mm.get_storage(a.binding()).unwrap(), view_a, "same address");
    assert_eq!(mm.get_storage(b.binding()).unwrap(), view_b);
    assert!(intact(&mut mm, &a, 1) && intact(&mut mm, &b, 2));
    assert_eq!(mm.wake().unwrap(), 0, "awake: nothing to do");
    let c = written(&mut mm, MIB, 4);
    assert!(intact(&mut mm, &c, 4));
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_discarding_sleep_keeps_addresses_and_frees_during_sleep_count() {
    use mem_pools::SleepContents;
    let (vm, mut mm) = arena_manager(0);
    let keep = written(&mut mm, 2 * G, 1);
    let dropped = written(&mut mm, 2 * G, 2);
    let report = mm.sleep(SleepContents::Discard).unwrap();
    assert_eq!(report.preserved_bytes, 0);
    drop(dropped);
    mm.drain_drops();
    assert_eq!(
        mm.wake().unwrap(),
        2 * G,
        "only what is still live maps again"
    );
    assert_eq!(vm.vm_stats().physical_bytes, 2 * G);
    mm.write(keep.binding(), &[7; 64]).unwrap();
    drop(keep);
    mm.cleanup(true);
    assert!(vm.vm_stats().physical_bytes == 0);
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_lazy_arena_maps_a_slices_chunks_at_its_first_dereference() {
    let vm = Arc::new(HostVirtualMemory::with_capacity(256 * MIB).unwrap());
    let storage = ResourceStorage::new(HostResource::new()).with_virtual_memory(vm.clone());
    let mut mm = MemoryManagement::from_configuration(
        storage,
        &props(),
        arena(64 * MIB),
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions {
            lazy_pages: true,
            ..MemoryManagementOptions::default()
        },
    );
    let touched = mm.reserve(3 * MIB).unwrap();
    let never = mm.reserve(4 * G).unwrap();
    assert_eq!(mm.stats().reserved_bytes.current, 0, "counted, not mapped");
    assert_eq!(vm.vm_stats().physical_bytes, 0);
    mm.write(touched.binding(), &pattern(5, 4096)).unwrap();
    assert_eq!(
        vm.vm_stats().mapped_bytes,
        2 * G,
        "the first dereference maps the slice's chunks"
    );
    let mut out = vec![0; 4096];
    mm.read(touched.binding(), &mut out).unwrap();
    assert_eq!(out, pattern(5, 4096));
    drop(never); // never touched: nothing to give back
    mm.drain_drops();
    assert_eq!(vm.vm_stats().mapped_bytes, 2 * G);
    drop(touched);
    mm.cleanup(true);
    assert_eq!(vm.vm_stats().physical_bytes, 0);
}
