//! A create the device refuses while the learner skips sheds: the arena
//! forgets what it learned, sheds its idle chunks and tries once more
//! (`chunks.rs`, `map_missing`), so a learned keep never turns into an
//! out-of-memory error that shedding would have avoided.

use std::sync::Arc;

use mem_storage::units::{KIB, MIB};
use mem_storage::{HostResource, HostVirtualMemory, ResourceStorage, VirtualMemory};

use super::shed_learn::ShedLearner;
use crate::{
    MemoryConfiguration, MemoryDeviceProperties, MemoryManagement, MemoryManagementOptions,
    MemoryPoolOptions, PoolType, ServerLogger,
};

/// What the device holds at once.
const CAPACITY: u64 = 64 * MIB;

type Mm = MemoryManagement<ResourceStorage<HostResource>>;

/// An arena over a 64 MiB device with 64 KiB granules.
fn arena() -> (Arc<HostVirtualMemory>, Mm) {
    let vm = Arc::new(HostVirtualMemory::with_granularity(CAPACITY, 64 * KIB).unwrap());
    let storage = ResourceStorage::new(HostResource::new()).with_virtual_memory(vm.clone());
    let pool = MemoryPoolOptions {
        pool_type: PoolType::VirtualArena {
            max_slice_size: 64 * MIB,
            range_size: 256 * MIB,
            release_threshold: u64::MAX,
        },
        dealloc_period: None,
    };
    let mm = MemoryManagement::from_configuration(
        storage,
        &MemoryDeviceProperties {
            max_page_size: 64 * MIB,
            alignment: 256,
        },
        MemoryConfiguration::Custom {
            pool_options: vec![pool],
        },
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    (vm, mm)
}

/// 48 MiB mapped, 32 MiB of it idle (a freed slice before a live one),
/// then a 40 MiB slice that fits no hole: it needs 40 MiB of chunks on a
/// device with 16 MiB free. Returns the new slice's size (or the error)
/// and the device's virtual memory.
fn grow_past_free_memory(keeping: bool) -> (Result<u64, String>, Arc<HostVirtualMemory>) {
    let (vm, mut mm) = arena();
    let freed = mm.reserve(32 * MIB).unwrap();
    let held = mm.reserve(16 * MIB).unwrap();
    mm.write(held.binding(), &[7; 4096]).unwrap();
    drop(freed);
    mm.drain_drops();
    assert_eq!(vm.vm_stats().physical_bytes, 48 * MIB);
    if keeping {
        mm.core.arenas.learn = ShedLearner::keeping();
    }
    let grown = mm
        .reserve(40 * MIB)
        .map(|h| h.size())
        .map_err(|e| e.to_string());
    let mut out = [0; 4096];
    mm.read(held.binding(), &mut out).unwrap();
    assert_eq!(out, [7; 4096], "the live slice's bytes moved");
    (grown, vm)
}

#[test]
fn a_create_refused_while_the_learner_keeps_idle_chunks_forgets_sheds_and_fits() {
    let (grown, vm) = grow_past_free_memory(true);
    assert_eq!(grown, Ok(40 * MIB));
    let stats = vm.vm_stats();
    assert!(
        stats.refused_calls >= 1,
        "the device never refused a create"
    );
    assert!(stats.unmaps >= 1, "no idle chunk was shed: {stats:?}");
    assert!(stats.peak_physical_bytes <= CAPACITY);
}

#[test]
fn an_arena_that_sheds_fits_the_same_growth_without_a_refusal() {
    // The shed runs before the create: nothing is refused.
    let (grown, vm) = grow_past_free_memory(false);
    assert_eq!(grown, Ok(40 * MIB));
    assert_eq!(vm.vm_stats().refused_calls, 0);
    assert!(vm.vm_stats().unmaps >= 1);
}

/// Live bytes at their peak while idle holes pile up: an 8 MiB slice and
/// 16 pairs of 64 KiB slices, then, pair by pair, the second slice of a
/// pair freed and a 128 KiB slice reserved (no hole fits it). Live bytes
/// stay within one 64 KiB slice of their peak while the idle holes grow
/// past their share (at the twelfth 128 KiB slice). Returns the unmaps
/// and the sheds skipped.
fn holes_at_the_live_peak() -> (u64, u64) {
    let (vm, mut mm) = arena();
    let big = mm.reserve(8 * MIB).unwrap();
    let mut kept = vec![big];
    let mut freed = Vec::new();
    for _ in 0..16 {
        kept.push(mm.reserve(64 * KIB).unwrap());
        freed.push(mm.reserve(64 * KIB).unwrap());
    }
    for hole in freed {
        drop(hole);
        mm.drain_drops();
        kept.push(mm.reserve(128 * KIB).unwrap());
    }
    (vm.vm_stats().unmaps, mm.stats().chunks.sheds_skipped)
}

#[test]
fn idle_holes_at_the_live_peak_are_not_shed() {
    let (unmaps, skipped) = holes_at_the_live_peak();
    assert!(skipped >= 1, "no shed came due: the test no longer tests");
    assert_eq!(unmaps, 0);
}
