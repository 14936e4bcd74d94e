//! Arena chunk bookkeeping across ranges and pools: regression tests for
//! what the model test (`tests/model.rs`) found.
//!
//! - Idle chunks cached by one arena pool (or one range of a pool) are
//!   shed before another creates a chunk once they pass their share:
//!   peak physical memory is the peak of granules live slices touch,
//!   whatever the pools' caches hold.
//! - A pool's release threshold bounds the idle chunks of all its ranges
//!   together, not of each range.
//! - A refused reservation never leaves more physical memory, reserved
//!   bytes or cache than before: the chunks it created go back to the
//!   device (a chunk whose map is refused too), and idle chunks it shed
//!   stay shed.
//! - A chunk whose release the device refuses is released at the engine's
//!   next flush, not leaked until the storage drops.

mod common;

use std::sync::Arc;

use common::*;
use mem_pools::{
    IoError, ManagedMemoryHandle, MemoryConfiguration, MemoryManagement, MemoryManagementOptions,
    MemoryPoolOptions, PoolReportKind, PoolType, ServerLogger,
};
use mem_storage::{
    ComputeStorage, FaultInjection, FaultPlan, HostResource, HostVirtualMemory, Operation,
    ResourceStorage, StorageError, VirtualMemory,
};

const G: u64 = 64 * KIB;

type Mm = MemoryManagement<ResourceStorage<HostResource>>;

fn arena(max_slice_size: u64, range_size: u64, release_threshold: u64) -> MemoryPoolOptions {
    MemoryPoolOptions {
        pool_type: PoolType::VirtualArena {
            max_slice_size,
            range_size,
            release_threshold,
        },
        dealloc_period: None,
    }
}

fn manager(pools: Vec<MemoryPoolOptions>) -> (Arc<HostVirtualMemory>, Mm) {
    let vm = Arc::new(HostVirtualMemory::with_granularity(64 * MIB, G).unwrap());
    let storage = ResourceStorage::new(HostResource::new()).with_virtual_memory(vm.clone());
    let mm = MemoryManagement::from_configuration(
        storage,
        &props(),
        MemoryConfiguration::Custom {
            pool_options: pools,
        },
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    (vm, mm)
}

/// (bytes reserved, cached bytes, release threshold) of each arena pool.
fn arenas(mm: &Mm) -> Vec<(u64, u64, u64)> {
    mm.memory_report()
        .pools
        .iter()
        .filter_map(|p| match p.kind {
            PoolReportKind::Arena {
                cached_bytes,
                release_threshold,
                ..
            } => Some((p.bytes_reserved, cached_bytes, release_threshold)),
            _ => None,
        })
        .collect()
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_chunk_cached_by_one_arena_pool_serves_another_before_a_new_chunk_is_made() {
    // Small slices in an arena that caches 4 granules; large ones in another.
    let (vm, mut mm) = manager(vec![
        arena(16 * KIB, MIB, 4 * G),
        arena(4 * MIB, 4 * MIB, 0),
    ]);
    let small: Vec<_> = (0..16).map(|i| written(&mut mm, 16 * KIB, i)).collect();
    assert_eq!(
        vm.vm_stats().physical_bytes,
        4 * G,
        "four granules of small slices"
    );
    drop(small);
    mm.drain_drops();
    assert_eq!(
        mm.stats().chunks.cached_bytes,
        4 * G,
        "the small arena caches them"
    );
    let before = mm.stats().chunks;
    // Five granules in the large arena's range: the four cached chunks
    // are shed (all idle: past their share) and kept for the run (the
    // cache's bound spares the run a shed is for), the run maps them and
    // one new chunk of one granule.
    let large = written(&mut mm, 5 * G, 99);
    let after = mm.stats().chunks;
    assert_eq!(after.creates - before.creates, 1, "one chunk for the rest");
    assert_eq!(after.maps - before.maps, 5);
    assert_eq!(after.reuses - before.reuses, 4, "the four shed ones");
    assert_eq!(after.unmaps - before.unmaps, 4, "the four idle ones shed");
    assert_eq!(after.releases, before.releases, "none released");
    assert_eq!(after.cached_bytes, 0);
    let vs = vm.vm_stats();
    assert_eq!(vs.physical_bytes, 5 * G);
    assert_eq!(
        vs.peak_physical_bytes,
        5 * G,
        "peak physical = peak of granules live slices touch (5), not 4 cached + 5"
    );
    assert!(intact(&mut mm, &large, 99));
    // Each pool's reserved bytes are its mapped chunks; together, the VM's.
    assert_eq!(
        arenas(&mm),
        vec![(0, 0, 4 * G), (5 * G, 0, 0)],
        "each pool counts the chunks mapped in its ranges"
    );
    assert_eq!(mm.stats().reserved_bytes.current, vs.mapped_bytes);
    drop(large);
    mm.cleanup(true);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_pools_threshold_bounds_the_idle_chunks_of_all_its_ranges() {
    // 1 MiB ranges and slices up to 1 MiB: a second range is reserved
    // when the first cannot fit a slice. Threshold: 3 granules.
    let (vm, mut mm) = manager(vec![arena(MIB, MIB, 3 * G)]);
    // Slices of one granule each (one chunk each: a chunk goes whole).
    let a: Vec<_> = (0..9).map(|i| written(&mut mm, G, i)).collect();
    let b = written(&mut mm, 8 * G, 2); // does not fit: range 2, granules 0..8
    assert_eq!(mm.memory_report().pools[0].pages, 2, "two ranges");
    assert_eq!(vm.vm_stats().physical_bytes, 17 * G);
    drop(a);
    mm.drain_drops();
    assert_eq!(
        arenas(&mm)[0].1,
        3 * G,
        "range 1 caches up to the threshold"
    );
    drop(b);
    mm.drain_drops();
    let (reserved, cached, threshold) = arenas(&mm)[0];
    assert!(
        cached <= threshold,
        "the pool caches {cached} bytes over two ranges, above its threshold {threshold}"
    );
    assert_eq!(reserved, cached, "nothing live: reserved is the cache");
    assert_eq!(vm.vm_stats().mapped_bytes, cached);
    mm.cleanup(true);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}

type Faulty = Arc<FaultInjection<HostVirtualMemory>>;

/// One arena (slices to 4 MiB, 16 chunks cached) over a virtual memory
/// whose calls can be failed.
fn faulty_manager() -> (Faulty, Mm) {
    let vm = Arc::new(FaultInjection::new(
        HostVirtualMemory::with_granularity(64 * MIB, G).unwrap(),
    ));
    let storage = ResourceStorage::new(HostResource::new())
        .with_virtual_memory(vm.clone() as Arc<dyn VirtualMemory>);
    let mm = MemoryManagement::from_configuration(
        storage,
        &props(),
        MemoryConfiguration::Custom {
            pool_options: vec![arena(4 * MIB, 16 * MIB, 16 * G)],
        },
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    (vm, mm)
}

/// Fail the `n`-th call of `operation` from now on (1-based), only it.
fn fail_nth(vm: &Faulty, operation: Operation, n: u64) {
    let seen = std::sync::atomic::AtomicU64::new(0);
    vm.set_plan(FaultPlan::Matching(Arc::new(move |call| {
        call.operation == operation
            && seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1 == n
    })));
}

/// (reserved, cached, VM physical, VM mapped).
fn levels(vm: &Faulty, mm: &Mm) -> (u64, u64, u64, u64) {
    let vs = vm.vm_stats();
    let stats = mm.stats();
    (
        stats.reserved_bytes.current,
        stats.chunks.cached_bytes,
        vs.physical_bytes,
        vs.mapped_bytes,
    )
}

/// Live slices on granules 0 and 3 around a hole of two granules whose
/// chunk (one, created for the hole's slice) is idle, cached.
fn with_an_idle_hole(mm: &mut Mm) -> [ManagedMemoryHandle; 2] {
    let keep = written(mm, G, 1); // granule 0
    let hole = written(mm, 2 * G, 2); // granules 1-2
    let fence = written(mm, 256, 3); // granule 3: the hole stays a hole
    drop(hole);
    mm.drain_drops();
    assert_eq!(mm.stats().chunks.cached_bytes, 2 * G);
    [keep, fence]
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_refused_create_gives_back_nothing_but_what_it_shed() {
    let (vm, mut mm) = faulty_manager();
    let [keep, _fence] = with_an_idle_hole(&mut mm);
    let (reserved, cached, physical, mapped) = levels(&vm, &mm);
    // Four granules past the end: the idle chunk (two granules, half the
    // mapped ones) is shed, then the run's chunk is refused.
    fail_nth(&vm, Operation::CreateChunk, 1);
    let err = mm.reserve(4 * G).unwrap_err();
    vm.disarm();
    assert!(
        matches!(
            err,
            IoError::Storage(StorageError::Injected {
                operation: "create_chunk",
                ..
            })
        ),
        "{err}"
    );
    assert_eq!(
        levels(&vm, &mm),
        (
            reserved - 2 * G,
            cached - 2 * G,
            physical - 2 * G,
            mapped - 2 * G
        ),
        "only the shed chunk is gone"
    );
    assert!(intact(&mut mm, &keep, 1));
    // The retry lands after the fence (granule 3 + 256 B): granules 4-6
    // get one chunk, and granule 7, which the slice covers only in part
    // (a neighbour may share it), one of its own.
    let calls = mm.stats().chunks;
    let h = written(&mut mm, 4 * G, 4);
    assert_eq!(mm.stats().chunks.creates - calls.creates, 2);
    assert_eq!(mm.stats().chunks.maps - calls.maps, 2);
    assert!(intact(&mut mm, &h, 4));
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_new_chunk_whose_map_is_refused_goes_back_to_the_device() {
    let (vm, mut mm) = faulty_manager();
    let [keep, _fence] = with_an_idle_hole(&mut mm);
    let (reserved, cached, physical, mapped) = levels(&vm, &mm);
    let releases = mm.stats().chunks.releases;
    // Too big for the hole, so past the end (granules 4-5, then 6 apart:
    // the slice covers it in part): the idle chunk is shed for 4-5 and
    // mapped there again, a chunk is created for 6, its map refused.
    fail_nth(&vm, Operation::Map, 2);
    let err = mm.reserve(3 * G).unwrap_err();
    assert!(
        matches!(
            err,
            IoError::Storage(StorageError::Injected {
                operation: "map",
                ..
            })
        ),
        "{err}"
    );
    vm.disarm();
    assert_eq!(
        levels(&vm, &mm),
        (
            reserved - 2 * G,
            cached - 2 * G,
            physical - 2 * G,
            mapped - 2 * G
        ),
        "the new chunk is released, and the shed one the refused \
         reservation had mapped again"
    );
    assert_eq!(mm.stats().chunks.releases - releases, 2);
    assert!(intact(&mut mm, &keep, 1));
    let h = written(&mut mm, 3 * G, 5);
    assert!(intact(&mut mm, &h, 5));
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_refused_chunk_release_is_retried_at_the_next_flush() {
    let (vm, mut mm) = manager_with_threshold(0);
    let h = written(&mut mm, G, 1);
    fail_nth(&vm, Operation::ReleaseChunk, 1);
    drop(h);
    mm.drain_drops(); // unmapped; its release refused
    vm.disarm();
    // The next engine call that flushes gives it back.
    mm.cleanup(false);
    assert_eq!(vm.vm_stats().physical_bytes, 0, "{:?}", vm.vm_stats());
    assert_eq!(mm.storage().bytes_allocated(), 0);
    assert_eq!(mm.stats().chunks.releases, 1);
    mm.cleanup(true);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}

/// One arena caching nothing over a virtual memory whose calls can fail.
fn manager_with_threshold(threshold: u64) -> (Faulty, Mm) {
    let vm = Arc::new(FaultInjection::new(
        HostVirtualMemory::with_granularity(64 * MIB, G).unwrap(),
    ));
    let storage = ResourceStorage::new(HostResource::new())
        .with_virtual_memory(vm.clone() as Arc<dyn VirtualMemory>);
    let mm = MemoryManagement::from_configuration(
        storage,
        &props(),
        MemoryConfiguration::Custom {
            pool_options: vec![arena(4 * MIB, 16 * MIB, threshold)],
        },
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    (vm, mm)
}
