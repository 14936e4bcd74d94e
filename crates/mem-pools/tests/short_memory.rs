//! An arena near a full device: a create the device refuses is not yet
//! an out-of-memory error. Idle chunks are shed whatever their share
//! (`pools/arena/shed_short.rs`), and the reservation is placed again
//! on the idle slots of any free slice (`pools/arena/place_short.rs`).
//! Counted by the storage's `VirtualMemoryStats` (64 MiB of 64 KiB
//! granules, `host_arena`).

mod common;

use common::*;
use mem_storage::VirtualMemory;

/// One granule of `host_arena`.
const SLOT: u64 = 64 * KIB;

#[test]
#[cfg_attr(miri, ignore)]
fn a_refused_create_sheds_idle_chunks_below_their_share() {
    let (vm, mut mm) = host_arena(32 * MIB, 256 * MIB, None);
    // An 8-slot hole mapped idle (a whole chunk), then the device filled
    // but for 4 slots: 8 idle of 1,020 mapped is far under the share.
    let hole = written(&mut mm, 8 * SLOT, 0);
    let mut live = vec![written(&mut mm, SLOT, 1)];
    for i in 0..63 {
        live.push(written(&mut mm, MIB, i + 2));
    }
    live.push(written(&mut mm, 3 * SLOT, 99));
    drop(hole);
    mm.drain_drops();
    assert_eq!(vm.vm_stats().physical_bytes, 1020 * SLOT);
    // 10 slots fit neither in the hole nor in what the device has free:
    // only with the hole's chunk given back.
    let grown = written(&mut mm, 10 * SLOT, 7);
    assert!(intact(&mut mm, &grown, 7));
    assert!(vm.vm_stats().peak_physical_bytes <= 64 * MIB);
    drop((grown, live));
    mm.cleanup(true);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_slice_refused_a_new_chunk_lands_where_idle_mapped_slots_cover_it() {
    let (vm, mut mm) = host_arena(32 * MIB, 256 * MIB, None);
    // A 17-slot chunk whose first slot a live slice keeps: 16 idle slots
    // no shed can give back, in a free slice of 1 MiB.
    let first = written(&mut mm, 17 * SLOT, 0);
    let mut live = vec![(written(&mut mm, SLOT, 1), 1)];
    // Nine unmapped holes of 6..=14 slots, one per size class between a
    // 6-slot request and that 1 MiB slice: placement's hot path weighs
    // the request's class and the eight above it, never the idle slots.
    let mut holes = Vec::new();
    for i in 0..9 {
        holes.push(written(&mut mm, (6 + i) * SLOT, 2 + i));
        live.push((written(&mut mm, SLOT, 20 + i), 20 + i));
    }
    drop(first);
    mm.drain_drops();
    live.push((written(&mut mm, SLOT, 40), 40)); // the idle chunk's first slot
    drop(holes);
    mm.drain_drops();
    mm.cleanup(true); // the holes' chunks go back; the partly live one stays
    // The device filled but for 5 slots, in slices no hole holds.
    for i in 0..31 {
        live.push((written(&mut mm, 2 * MIB, 50 + i), 50 + i));
    }
    let before = vm.vm_stats();
    assert_eq!(before.physical_bytes, (17 + 10 + 992) * SLOT);
    let placed = written(&mut mm, 6 * SLOT, 9);
    assert!(intact(&mut mm, &placed, 9));
    let after = vm.vm_stats();
    assert_eq!(after.chunks_created, before.chunks_created, "{after:?}");
    assert_eq!(after.physical_bytes, before.physical_bytes);
    assert!(live.iter().all(|(h, seed)| intact(&mut mm, h, *seed)));
    drop((placed, live));
    mm.cleanup(true);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}
