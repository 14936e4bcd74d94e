//! Arena chunk bookkeeping across ranges and pools: regression tests for
//! what the model test (`tests/model.rs`) found.
//!
//! - An idle chunk cached by one arena pool (or one range of a pool) is
//!   moved to where another needs one before a new chunk is created: peak
//!   physical memory is the peak of granules live slices touch, whatever
//!   the pools' caches hold.
//! - A pool's release threshold bounds the idle chunks of all its ranges
//!   together, not of each range.

mod common;

use std::sync::Arc;

use common::*;
use mem_pools::{
    ManagedMemoryHandle, MemoryConfiguration, MemoryManagement, MemoryManagementOptions,
    MemoryPoolOptions, PoolReportKind, PoolType, ServerLogger,
};
use mem_storage::{HostResource, HostVirtualMemory, ResourceStorage, VirtualMemory};

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

fn written(mm: &mut Mm, size: u64, seed: u64) -> ManagedMemoryHandle {
    let h = mm.reserve(size).unwrap();
    mm.write(h.binding(), &pattern(seed, size as usize))
        .unwrap();
    h
}

fn intact(mm: &mut Mm, h: &ManagedMemoryHandle, seed: u64) -> bool {
    let mut out = vec![0; h.size() as usize];
    mm.read(h.binding(), &mut out).unwrap();
    out == pattern(seed, h.size() as usize)
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
    // move there, one is new.
    let large = written(&mut mm, 5 * G, 99);
    let after = mm.stats().chunks;
    assert_eq!(after.creates - before.creates, 1, "one new, four moved");
    assert_eq!(after.unmaps - before.unmaps, 4);
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
        "the moved chunks count in the pool they serve"
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
    let a = written(&mut mm, 9 * G, 1); // range 1, granules 0..9
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
