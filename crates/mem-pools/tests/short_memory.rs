//! An arena near a full device: a create the device refuses is not yet
//! an out-of-memory error. Idle chunks are shed whatever their share
//! (`pools/arena/shed_short.rs`).
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
