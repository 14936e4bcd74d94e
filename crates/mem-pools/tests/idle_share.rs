//! The idle share (`MemoryManagementOptions::arena_idle_share`) moves an
//! arena along the memory/driver-time frontier; a shed stops once the
//! run is covered (while idle chunks are under three times the share);
//! and a shed chunk
//! kept for reuse backs a later run without a create, even a run smaller
//! than the chunk (mapped over the empty slots beside it). Counted by the
//! storage's `VirtualMemoryStats`.

mod common;

use std::sync::Arc;

use common::*;
use mem_pools::{ManagedMemoryHandle, MemoryManagement};
use mem_storage::{HostResource, HostVirtualMemory, ResourceStorage, VirtualMemory};

const G: u64 = 64 * KIB;

type Mm = MemoryManagement<ResourceStorage<HostResource>>;

fn manager(idle_share: Option<u64>) -> (Arc<HostVirtualMemory>, Mm) {
    host_arena(32 * MIB, 64 * MIB, idle_share)
}

/// 440 mapped granules: 400 live in one slice, then eight 4-granule
/// chunks, each followed by a live granule, freed: 32 idle (over 1/16).
fn with_four_granule_holes(mm: &mut Mm) -> Vec<ManagedMemoryHandle> {
    let mut live = vec![written(mm, 400 * G, 1)];
    let mut holes = Vec::new();
    for i in 0..8 {
        holes.push(written(mm, 4 * G, 10 + i));
        live.push(written(mm, G, 20 + i));
    }
    drop(holes);
    mm.drain_drops();
    live
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_cached_chunk_larger_than_what_a_run_lacks_covers_it_without_a_create() {
    let (vm, mut mm) = manager(None);
    let live = with_four_granule_holes(&mut mm);
    let before = vm.vm_stats();
    assert_eq!(before.mapped_bytes, 440 * G, "{before:?}");
    // Five granules fit no 4-granule hole: they go past the live slices,
    // idle chunks are shed first, one cached chunk covers four of the five
    // slots and another (four granules) the last one and the three empty
    // slots after it.
    let run = written(&mut mm, 5 * G, 99);
    let after = vm.vm_stats();
    assert!(after.unmaps > before.unmaps, "shed: {after:?}");
    assert_eq!(
        after.chunks_created, before.chunks_created,
        "no create ({before:?} -> {after:?})"
    );
    assert_eq!(mm.stats().chunks.reuses, 2);
    assert_eq!(after.maps - before.maps, 2);
    assert_eq!(after.peak_physical_bytes, before.peak_physical_bytes);
    // The three slots past the run are mapped and idle: three granules
    // placed there cost no driver call.
    let next = written(&mut mm, 3 * G, 98);
    let last = vm.vm_stats();
    assert_eq!(
        (last.maps, last.chunks_created),
        (after.maps, after.chunks_created)
    );
    assert!(intact(&mut mm, &run, 99) && intact(&mut mm, &next, 98));
    assert!(intact(&mut mm, &live[0], 1));
    drop((live, run, next));
    mm.cleanup(true);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_shed_stops_once_the_cache_covers_the_run_while_idle_is_under_three_shares() {
    let (vm, mut mm) = manager(None);
    let live = with_four_granule_holes(&mut mm);
    let before = vm.vm_stats();
    let run = written(&mut mm, 5 * G, 99);
    let after = vm.vm_stats();
    // 32 of 440 granules idle is under three times 1/16: two 4-granule
    // chunks shed cover the five, and the shed stops there. Shedding on to
    // 3/4 of the share would unmap one more (to 2/3, two), to wait in the
    // cache, whose bound (1/32 of the mapped bytes) releases the oldest,
    // to be created again.
    assert_eq!(after.unmaps - before.unmaps, 2, "{after:?}");
    assert_eq!(after.chunks_released, before.chunks_released);
    assert_eq!(after.chunks_created, before.chunks_created);
    assert_eq!(after.physical_bytes, 440 * G);
    assert!(intact(&mut mm, &run, 99));
    drop((live, run));
    mm.cleanup(true);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}

/// Peak physical bytes and unmaps + maps + creates after the holes and one
/// 5-granule reservation that fits none of them.
fn peak_and_calls(idle_share: Option<u64>) -> (u64, u64) {
    let (vm, mut mm) = manager(idle_share);
    let live = with_four_granule_holes(&mut mm);
    let run = written(&mut mm, 5 * G, 99);
    let stats = vm.vm_stats();
    assert!(intact(&mut mm, &run, 99));
    drop((live, run));
    (
        stats.peak_physical_bytes,
        stats.unmaps + stats.maps + stats.chunks_created,
    )
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_idle_share_trades_physical_memory_for_driver_calls() {
    let (shed_peak, shed_calls) = peak_and_calls(None);
    let (kept_peak, kept_calls) = peak_and_calls(Some(0));
    let (loose_peak, loose_calls) = peak_and_calls(Some(8));
    // Default (1/16): the 32 idle granules are past the share, chunks are
    // shed and mapped again under the run; physical memory does not grow.
    assert_eq!(shed_peak, 440 * G);
    // Never: holes keep their chunks and the run gets a new one.
    assert_eq!(kept_peak, 445 * G);
    assert!(kept_calls < shed_calls, "{kept_calls} vs {shed_calls}");
    // 1/8: 32 of 440 is under the share, so nothing is shed either.
    assert_eq!((loose_peak, loose_calls), (kept_peak, kept_calls));
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_shed_for_a_run_the_cache_cannot_cover_stops_at_three_quarters_of_the_share() {
    let (vm, mut mm) = manager(None);
    let live = with_four_granule_holes(&mut mm);
    let before = vm.vm_stats();
    // 100 granules: more than every idle chunk together, so the shed goes
    // on until idle slots are under 3/4 of the share (1/16 of the mapped
    // ones). 32 of 440 idle, then 28 of 436, 24 of 432, 20 of 428: under
    // 3/4 × 428/16 = 20.06 after three unmaps (at 2/3 it took a fourth).
    let run = written(&mut mm, 100 * G, 99);
    let after = vm.vm_stats();
    assert_eq!(after.unmaps - before.unmaps, 3, "{after:?}");
    assert!(intact(&mut mm, &run, 99));
    drop((live, run));
    mm.cleanup(true);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}
