//! An arena near a full device: a create the device refuses is not yet
//! an out-of-memory error. Idle chunks are shed whatever their share
//! (`pools/arena/shed_short.rs`), and the reservation is placed again
//! on the idle slots of any free slice (`pools/arena/place_short.rs`).
//! Counted by the storage's `VirtualMemoryStats` (64 MiB of 64 KiB
//! granules, as `host_arena`).

mod common;

use std::sync::Arc;

use common::*;
use mem_pools::{ManagedMemoryHandle, MemoryManagement, MemoryManagementOptions};
use mem_storage::{
    FaultInjection, FaultPlan, HostResource, HostVirtualMemory, ResourceStorage, VirtualMemory,
};

type Mm = MemoryManagement<ResourceStorage<HostResource>>;

/// One granule of `host_arena`.
const SLOT: u64 = 64 * KIB;

/// Live handles and the seeds their bytes were written with.
type Live = Vec<(ManagedMemoryHandle, u64)>;

/// A scenario's setup: the live data and the request to reserve.
type Setup = fn(&mut Mm) -> (Live, u64);

fn keep(mm: &mut Mm, live: &mut Live, size: u64, seed: u64) {
    live.push((written(mm, size, seed), seed));
}

/// An 8-slot hole mapped idle (a whole chunk), then the device filled but
/// for 4 slots: 8 idle of 1,020 mapped is far under the share. Returns
/// the live data and a request (10 slots) that fits neither in the hole
/// nor in what the device has free: only with the hole's chunk given back.
fn idle_under_their_share(mm: &mut Mm) -> (Live, u64) {
    let hole = written(mm, 8 * SLOT, 0);
    let mut live = Vec::new();
    keep(mm, &mut live, SLOT, 1);
    for i in 0..63 {
        keep(mm, &mut live, MIB, i + 2);
    }
    keep(mm, &mut live, 3 * SLOT, 99);
    drop(hole);
    mm.drain_drops();
    (live, 10 * SLOT)
}

/// A 17-slot chunk whose first slot a live slice keeps (16 idle slots no
/// shed can give back, in a free slice of 1 MiB), nine unmapped holes of
/// 6..=14 slots — one per size class between a 6-slot request and that
/// slice, so placement's hot path weighs the request's class and the
/// eight above it, never the idle slots — and the device filled but for
/// 5 slots, in slices no hole holds. Returns the live data and the
/// request (6 slots).
fn a_partly_live_chunk_past_the_probe(mm: &mut Mm) -> (Live, u64) {
    let first = written(mm, 17 * SLOT, 0);
    let mut live = Vec::new();
    keep(mm, &mut live, SLOT, 1);
    let mut holes = Vec::new();
    for i in 0..9 {
        holes.push(written(mm, (6 + i) * SLOT, 2 + i));
        keep(mm, &mut live, SLOT, 20 + i);
    }
    drop(first);
    mm.drain_drops();
    keep(mm, &mut live, SLOT, 40); // the idle chunk's first slot
    drop(holes);
    mm.drain_drops();
    mm.cleanup(true); // the holes' chunks go back; the partly live one stays
    for i in 0..31 {
        keep(mm, &mut live, 2 * MIB, 50 + i);
    }
    (live, 6 * SLOT)
}

fn all_intact(mm: &mut Mm, live: &Live) -> bool {
    live.iter().all(|(h, seed)| intact(mm, h, *seed))
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_refused_create_sheds_idle_chunks_below_their_share() {
    let (vm, mut mm) = host_arena(32 * MIB, 256 * MIB, None);
    let (live, request) = idle_under_their_share(&mut mm);
    assert_eq!(vm.vm_stats().physical_bytes, 1020 * SLOT);
    let grown = written(&mut mm, request, 7);
    assert!(intact(&mut mm, &grown, 7));
    assert!(all_intact(&mut mm, &live));
    assert!(vm.vm_stats().peak_physical_bytes <= 64 * MIB);
    drop((grown, live));
    mm.cleanup(true);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_slice_refused_a_new_chunk_lands_where_idle_mapped_slots_cover_it() {
    let (vm, mut mm) = host_arena(32 * MIB, 256 * MIB, None);
    let (live, request) = a_partly_live_chunk_past_the_probe(&mut mm);
    let before = vm.vm_stats();
    assert_eq!(before.physical_bytes, (17 + 10 + 992) * SLOT);
    let placed = written(&mut mm, request, 9);
    assert!(intact(&mut mm, &placed, 9));
    let after = vm.vm_stats();
    assert_eq!(after.chunks_created, before.chunks_created, "{after:?}");
    assert_eq!(after.physical_bytes, before.physical_bytes);
    assert!(all_intact(&mut mm, &live));
    drop((placed, live));
    mm.cleanup(true);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}

type Faulty = Arc<FaultInjection<HostVirtualMemory>>;

/// `host_arena` over a virtual memory whose calls can be failed.
fn faulty_arena() -> (Faulty, Mm) {
    faulty_host_arena(32 * MIB, 256 * MIB, MemoryManagementOptions::default())
}

/// Both scenarios above with each driver call of their last reservation
/// failed in turn (alone, then with every call after it): the shed, the
/// cache's maps, the retried create and the placement retried elsewhere.
/// A refusal changes no slice, leaves no more physical memory than before
/// (when only one call fails: what was shed stays shed, what was created
/// goes back), and loses no live byte; once the fault passes the
/// reservation fits, and everything goes back at a cleanup.
#[test]
#[cfg_attr(miri, ignore)]
fn a_refusal_while_memory_is_short_changes_nothing_whichever_call_fails() {
    let scenarios: [Setup; 2] = [idle_under_their_share, a_partly_live_chunk_past_the_probe];
    for (which, setup) in scenarios.into_iter().enumerate() {
        let (vm, mut mm) = faulty_arena();
        let (live, request) = setup(&mut mm);
        let start = vm.calls();
        drop(written(&mut mm, request, 7));
        let calls = vm.calls() - start;
        assert!(calls > 0);
        drop(live);
        for n in 1..=calls {
            for plan in [FaultPlan::Nth, FaultPlan::FromNth] {
                let (vm, mut mm) = faulty_arena();
                let (live, request) = setup(&mut mm);
                let case = format!("scenario {which}, call {n} of {calls}, {:?}", plan(n));
                reserve_through_a_fault(&vm, &mut mm, (plan, n), request, &case);
                mm.drain_drops();
                assert!(all_intact(&mut mm, &live), "{case}");
                drop(live);
                mm.cleanup(true);
                assert!(vm.vm_stats().is_idle(), "{case}: {:?}", vm.vm_stats());
            }
        }
    }
}
