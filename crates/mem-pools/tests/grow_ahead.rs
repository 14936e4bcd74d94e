//! `arena_grow_ahead`: while live bytes peak, a run's last new chunk is
//! rounded up over the empty slots after it, so the reservations that
//! follow map nothing (`pools/arena/grow_ahead.rs`). Counted by the
//! storage's `VirtualMemoryStats` (64 KiB granules).

mod common;

use std::sync::Arc;

use common::*;
use mem_pools::{MemoryManagement, MemoryManagementOptions};
use mem_storage::{FaultPlan, HostResource, HostVirtualMemory, ResourceStorage, VirtualMemory};

type Mm = MemoryManagement<ResourceStorage<HostResource>>;

/// One granule.
const SLOT: u64 = 64 * KIB;

/// An arena over `device` bytes of 64 KiB granules, growing ahead by
/// `ahead` bytes (`None`: off, the default).
fn arena(device: u64, ahead: Option<u64>) -> (Arc<HostVirtualMemory>, Mm) {
    let vm = Arc::new(HostVirtualMemory::with_granularity(device, SLOT).unwrap());
    let storage = ResourceStorage::new(HostResource::new()).with_virtual_memory(vm.clone());
    let options = MemoryManagementOptions {
        arena_grow_ahead: ahead,
        ..MemoryManagementOptions::default()
    };
    (vm, arena_over(storage, 16 * MIB, 64 * MIB, options))
}

/// Forty reservations of 40 KiB, one after another, all kept: the first
/// touch of a model's small tensors. Returns the handles (to keep them).
fn first_touch(mm: &mut Mm) -> Vec<mem_pools::ManagedMemoryHandle> {
    (0..40).map(|i| written(mm, 40 * KIB, i)).collect()
}

#[test]
fn growing_ahead_maps_what_the_next_reservations_take_in_fewer_creates() {
    let (_, mut off) = arena(64 * MIB, None);
    let kept_off = first_touch(&mut off);
    let (vm, mut on) = arena(64 * MIB, Some(10 * SLOT));
    let kept_on = first_touch(&mut on);
    let (creates_off, creates_on) = (off.stats().chunks.creates, on.stats().chunks.creates);
    assert!(
        creates_on * 3 <= creates_off,
        "{creates_off} creates without, {creates_on} with"
    );
    // Never more than one grow-ahead over live data, and the data intact.
    let live = on.stats().requested_bytes.current;
    assert!(vm.vm_stats().peak_physical_bytes <= live + 10 * SLOT + SLOT);
    for (i, h) in kept_on.iter().enumerate() {
        assert!(intact(&mut on, h, i as u64));
    }
    drop(kept_off);
}

#[test]
fn nothing_grows_ahead_while_live_is_under_its_peak() {
    let (vm, mut mm) = arena(64 * MIB, Some(10 * SLOT));
    let kept = written(&mut mm, 32 * SLOT, 0);
    let freed = written(&mut mm, 32 * SLOT, 1);
    drop(freed);
    mm.drain_drops();
    mm.cleanup(true);
    let before = vm.vm_stats().physical_bytes;
    assert_eq!(before, 32 * SLOT, "the freed half given back");
    // Under the 4 MiB peak: a reservation maps only its own slots.
    let small = written(&mut mm, 3 * SLOT - KIB, 2);
    let grew = vm.vm_stats().physical_bytes - before;
    assert_eq!(grew, 3 * SLOT, "{grew} bytes created for 3 slots");
    assert!(intact(&mut mm, &small, 2) && intact(&mut mm, &kept, 0));
}

#[test]
fn a_small_workload_grows_ahead_by_at_most_half_of_what_it_holds() {
    let (vm, mut mm) = arena(64 * MIB, Some(64 * SLOT));
    let first = written(&mut mm, 8 * SLOT, 0);
    let second = written(&mut mm, SLOT / 2, 1);
    // 8 slots held: the second run grows by half of them past its own.
    assert_eq!(vm.vm_stats().physical_bytes, 8 * SLOT + SLOT + 4 * SLOT);
    assert!(intact(&mut mm, &first, 0) && intact(&mut mm, &second, 1));
}

#[test]
fn a_reservation_of_whole_granules_grows_nothing_ahead() {
    // A buffer ending on a granule shares no slot with the next one.
    let (vm, mut mm) = arena(64 * MIB, Some(10 * SLOT));
    let first = written(&mut mm, 8 * SLOT, 0);
    let second = written(&mut mm, 3 * SLOT, 1);
    assert_eq!(vm.vm_stats().physical_bytes, 11 * SLOT);
    let third = written(&mut mm, 3 * SLOT - KIB, 2);
    assert!(
        vm.vm_stats().physical_bytes > 14 * SLOT,
        "this one ends inside a slot"
    );
    assert!(intact(&mut mm, &first, 0) && intact(&mut mm, &second, 1));
    assert!(intact(&mut mm, &third, 2));
}

#[test]
fn a_grown_create_the_device_refuses_is_made_at_the_runs_own_size() {
    // 24 slots of device: 16 held, then a 1-slot run that would grow to
    // 9 (half of 16 past it) but only 8 are left.
    let (vm, mut mm) = arena(24 * SLOT, Some(10 * SLOT));
    let held = written(&mut mm, 16 * SLOT, 0);
    let next = mm.reserve(SLOT / 2).expect("the run's own slot fits");
    mm.write(next.binding(), &pattern(1, SLOT as usize / 2))
        .unwrap();
    assert_eq!(vm.vm_stats().physical_bytes, 17 * SLOT);
    assert!(intact(&mut mm, &held, 0) && intact(&mut mm, &next, 1));
}

#[test]
fn off_by_default() {
    assert_eq!(MemoryManagementOptions::default().arena_grow_ahead, None);
    let (vm, mut mm) = arena(64 * MIB, None);
    let kept = first_touch(&mut mm);
    // Each chunk is a run's own: physical memory is what the slots hold.
    let slots = (40 * 40 * KIB).div_ceil(SLOT);
    assert_eq!(vm.vm_stats().physical_bytes, slots * SLOT);
    drop(kept);
}

/// Each driver call of a grown reservation failed in turn (alone, then
/// with every call after it): the grown create, its map and access, the
/// create at the run's own size. A refusal changes no slice, leaves no
/// more physical memory than before (when one call fails alone) and
/// loses no live byte; once the
/// fault passes the reservation fits, and a cleanup gives everything back.
#[test]
#[cfg_attr(miri, ignore)]
fn a_refused_grown_reservation_changes_nothing_whichever_call_fails() {
    let faulty = || {
        let options = MemoryManagementOptions {
            arena_grow_ahead: Some(10 * SLOT),
            ..MemoryManagementOptions::default()
        };
        faulty_host_arena(16 * MIB, 64 * MIB, options)
    };
    let (vm, mut mm) = faulty();
    let held = written(&mut mm, 40 * SLOT, 0);
    let start = vm.calls();
    drop(written(&mut mm, 3 * SLOT - KIB, 1));
    let calls = vm.calls() - start;
    assert!(calls >= 3, "a create, a map and an access: {calls}");
    drop(held);
    for n in 1..=calls {
        for plan in [FaultPlan::Nth, FaultPlan::FromNth] {
            let (vm, mut mm) = faulty();
            let held = written(&mut mm, 40 * SLOT, 0);
            let case = format!("call {n} of {calls}, {:?}", plan(n));
            reserve_through_a_fault(&vm, &mut mm, (plan, n), 3 * SLOT - KIB, &case);
            mm.drain_drops();
            assert!(intact(&mut mm, &held, 0), "{case}");
            drop(held);
            mm.cleanup(true);
            assert!(vm.vm_stats().is_idle(), "{case}: {:?}", vm.vm_stats());
        }
    }
}
