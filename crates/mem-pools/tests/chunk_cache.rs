//! Shed arena chunks are kept unmapped for reuse: a later run maps them
//! again instead of creating new ones, and an explicit cleanup releases
//! what the cache holds. Counted by the storage's `VirtualMemoryStats`.

mod common;

use std::sync::Arc;

use common::*;
use mem_pools::{ManagedMemoryHandle, MemoryManagement};
use mem_storage::{HostResource, HostVirtualMemory, ResourceStorage, VirtualMemory};

const G: u64 = 64 * KIB;

type Mm = MemoryManagement<ResourceStorage<HostResource>>;

fn manager() -> (Arc<HostVirtualMemory>, Mm) {
    manager_sharing(None)
}

/// A manager whose idle chunks are shed past 1/`idle_share` of the mapped
/// ones (`None`: the default, 1/16).
fn manager_sharing(idle_share: Option<u64>) -> (Arc<HostVirtualMemory>, Mm) {
    host_arena(8 * MIB, 16 * MIB, idle_share)
}

/// 128 mapped granules, 8 of them idle one-granule holes between live
/// slices (1/16 of the mapped ones: the next run sheds idle chunks).
fn with_idle_holes(mm: &mut Mm) -> Vec<ManagedMemoryHandle> {
    let mut live = vec![written(mm, 112 * G, 1)];
    let mut holes = Vec::new();
    for i in 0..8 {
        holes.push(written(mm, G, 10 + i));
        live.push(written(mm, G, 20 + i));
    }
    drop(holes);
    mm.drain_drops();
    live
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_shed_chunk_is_mapped_again_for_a_later_run_instead_of_a_new_create() {
    let (vm, mut mm) = manager();
    let live = with_idle_holes(&mut mm);
    let before = vm.vm_stats();
    assert_eq!(before.mapped_bytes, 128 * G, "{before:?}");
    // Two granules fit no one-granule hole: they land on unmapped slots,
    // idle chunks are shed first, and the shed chunks back the run.
    let run = written(&mut mm, 2 * G, 99);
    let after = vm.vm_stats();
    assert!(
        after.unmaps > before.unmaps,
        "idle chunks were shed: {after:?}"
    );
    assert_eq!(
        after.chunks_created, before.chunks_created,
        "no create: the run maps shed chunks ({before:?} -> {after:?})"
    );
    assert_eq!(after.maps - before.maps, 2, "two one-granule chunks mapped");
    assert_eq!(mm.stats().chunks.reuses, 2);
    assert_eq!(after.peak_physical_bytes, before.peak_physical_bytes);
    assert!(intact(&mut mm, &run, 99));
    assert!(
        live.iter()
            .enumerate()
            .skip(1)
            .all(|(i, h)| intact(&mut mm, h, 19 + i as u64))
    );
    drop((live, run));
    mm.cleanup(true);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_explicit_cleanup_releases_the_chunks_kept_for_reuse() {
    // At 1/64 the eight idle granules are past three times the share: the
    // shed goes on past the two the run needs (to three), and the one the
    // run does not map stays cached.
    let (vm, mut mm) = manager_sharing(Some(64));
    let live = with_idle_holes(&mut mm);
    let run = written(&mut mm, 2 * G, 99);
    let held = vm.vm_stats();
    assert!(
        held.physical_bytes > held.mapped_bytes,
        "a shed chunk is still cached, unmapped: {held:?}"
    );
    assert_eq!(mm.stats().reserved_bytes.current, held.physical_bytes);
    mm.cleanup(true);
    let after = vm.vm_stats();
    assert_eq!(after.physical_bytes, after.mapped_bytes, "{after:?}");
    assert!(after.chunks_released > held.chunks_released);
    assert_eq!(mm.stats().reserved_bytes.current, after.physical_bytes);
    assert!(intact(&mut mm, &run, 99));
    drop((live, run));
    mm.cleanup(true);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_run_past_the_caches_bound_maps_the_chunks_shed_for_it_instead_of_creating() {
    // 128 mapped granules, 16 of them idle in eight two-granule holes; the
    // cache's bound is 1/32 of the mapped bytes (four granules), the run
    // eight granules: the shed for it keeps its eight cached, and the run
    // maps them (no release, no create).
    let (vm, mut mm) = manager();
    let mut live = vec![written(&mut mm, 104 * G, 1)];
    let mut holes = Vec::new();
    for i in 0..8 {
        holes.push(written(&mut mm, 2 * G, 10 + i));
        live.push(written(&mut mm, G, 20 + i));
    }
    drop(holes);
    mm.drain_drops();
    let before = vm.vm_stats();
    assert_eq!(before.mapped_bytes, 128 * G, "{before:?}");
    let run = written(&mut mm, 8 * G, 99);
    let after = vm.vm_stats();
    assert_eq!(
        (after.chunks_released, after.chunks_created),
        (before.chunks_released, before.chunks_created),
        "shed chunks were released and created again ({before:?} -> {after:?})"
    );
    assert_eq!(mm.stats().chunks.reuses, 4);
    assert_eq!(after.peak_physical_bytes, before.peak_physical_bytes);
    assert!(intact(&mut mm, &run, 99));
    assert!(
        live.iter()
            .enumerate()
            .skip(1)
            .all(|(i, h)| intact(&mut mm, h, 19 + i as u64))
    );
    drop((live, run));
    mm.cleanup(true);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}
