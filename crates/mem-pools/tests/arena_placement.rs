//! Arena placement: a reservation goes where chunks are already mapped
//! (`pools/arena/place.rs`), so reused holes cost no driver call.
//!
//! The holes here are shaped with the release threshold: freeing past it
//! unmaps the *oldest* idle chunks, which leaves a hole mapped at one end
//! only, or one hole mapped and a tighter one not.

mod common;

use std::sync::Arc;

use common::*;
use mem_pools::{
    IoError, ManagedMemoryHandle, MemoryConfiguration, MemoryManagement, MemoryManagementOptions,
    MemoryPoolOptions, PoolType, ServerLogger,
};
use mem_storage::{
    FaultInjection, FaultPlan, HostResource, HostVirtualMemory, Operation, ResourceStorage,
    StorageError, VirtualMemory,
};

const G: u64 = 64 * KIB;

type Faulty = Arc<FaultInjection<HostVirtualMemory>>;
type Mm = MemoryManagement<ResourceStorage<HostResource>>;

/// One arena (slices to 4 MiB) caching up to `threshold` bytes of idle
/// chunks, over a virtual memory whose calls can be failed.
fn manager(threshold: u64) -> (Faulty, Mm) {
    let vm = Arc::new(FaultInjection::new(
        HostVirtualMemory::with_granularity(64 * MIB, G).unwrap(),
    ));
    let storage = ResourceStorage::new(HostResource::new())
        .with_virtual_memory(vm.clone() as Arc<dyn VirtualMemory>);
    let arena = MemoryPoolOptions {
        pool_type: PoolType::VirtualArena {
            max_slice_size: 4 * MIB,
            range_size: 16 * MIB,
            release_threshold: threshold,
        },
        dealloc_period: None,
    };
    let mm = MemoryManagement::from_configuration(
        storage,
        &props(),
        MemoryConfiguration::Custom {
            pool_options: vec![arena],
        },
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    (vm, mm)
}

fn free(mm: &mut Mm, h: ManagedMemoryHandle) {
    drop(h);
    mm.drain_drops();
}

/// Granules 0-3 a hole whose low half (0-1) was released and whose high
/// half (2-3) is mapped, idle; granule 4 live. Threshold: two chunks.
fn hole_mapped_at_its_high_end(mm: &mut Mm) -> ManagedMemoryHandle {
    let low = written(mm, 2 * G, 1);
    let high = written(mm, 2 * G, 2);
    let fence = written(mm, G, 3);
    free(mm, low); // oldest idle
    free(mm, high); // four idle, two over the threshold: the oldest go
    assert_eq!(mm.stats().chunks.cached_bytes, 2 * G);
    fence
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_freed_hole_refilled_by_a_same_size_allocation_costs_no_chunk_call() {
    let (_vm, mut mm) = manager(u64::MAX);
    let before = written(&mut mm, 3 * G, 1);
    let hole = written(&mut mm, 5 * G, 2);
    let after = written(&mut mm, G, 3);
    free(&mut mm, hole);
    let calls = mm.stats().chunks.driver_calls();
    for round in 0..20 {
        let refill = written(&mut mm, 5 * G, 10 + round);
        free(&mut mm, refill);
    }
    assert_eq!(mm.stats().chunks.driver_calls(), calls, "no chunk call");
    assert!(intact(&mut mm, &before, 1) && intact(&mut mm, &after, 3));
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_allocation_takes_the_mapped_high_end_of_a_hole_whose_low_end_was_released() {
    let (vm, mut mm) = manager(2 * G);
    let fence = hole_mapped_at_its_high_end(&mut mm);
    let (calls, physical) = (
        mm.stats().chunks.driver_calls(),
        vm.vm_stats().physical_bytes,
    );
    // The free index offers the hole, low end first: two chunks to map
    // there, none at its high end.
    let h = written(&mut mm, 2 * G, 4);
    assert_eq!(mm.stats().chunks.driver_calls(), calls, "no chunk call");
    assert_eq!(vm.vm_stats().physical_bytes, physical);
    assert_eq!(mm.stats().chunks.cached_bytes, 0, "both idle chunks reused");
    assert!(intact(&mut mm, &h, 4) && intact(&mut mm, &fence, 3));
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_allocation_takes_a_larger_mapped_hole_over_a_tighter_one_whose_chunks_were_released() {
    let (_vm, mut mm) = manager(4 * G);
    let tight = written(&mut mm, 2 * G, 1); // granules 0-1
    let fence = written(&mut mm, G, 2); // granule 2
    let roomy = written(&mut mm, 4 * G, 3); // granules 3-6
    let end = written(&mut mm, G, 4); // granule 7
    free(&mut mm, tight); // oldest idle
    free(&mut mm, roomy); // six idle, two over: the tight hole's go
    assert_eq!(mm.stats().chunks.cached_bytes, 4 * G);
    let calls = mm.stats().chunks.driver_calls();
    // The tight hole is the good fit; the roomy one is mapped.
    let h = written(&mut mm, 2 * G, 5);
    assert_eq!(mm.stats().chunks.driver_calls(), calls, "no chunk call");
    assert_eq!(mm.stats().chunks.cached_bytes, 2 * G);
    assert!(intact(&mut mm, &h, 5));
    assert!(intact(&mut mm, &fence, 2) && intact(&mut mm, &end, 4));
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_refused_reservation_at_a_holes_high_end_changes_no_slice_and_no_chunk() {
    let (vm, mut mm) = manager(2 * G);
    let fence = hole_mapped_at_its_high_end(&mut mm);
    let level = |vm: &Faulty, mm: &Mm| {
        let (vs, s) = (vm.vm_stats(), mm.stats());
        let cached = s.chunks.cached_bytes;
        (
            s.reserved_bytes.current,
            cached,
            vs.physical_bytes,
            vs.mapped_bytes,
        )
    };
    let before = level(&vm, &mm);
    // Three granules: the high end (1-3) needs one chunk, the low end two.
    // The one chunk created for granule 1 is refused.
    let seen = std::sync::atomic::AtomicU64::new(0);
    vm.set_plan(FaultPlan::Matching(Arc::new(move |call| {
        call.operation == Operation::CreateChunk
            && seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed) == 0
    })));
    let err = mm.reserve(3 * G).unwrap_err();
    vm.disarm();
    assert!(
        matches!(err, IoError::Storage(StorageError::Injected { .. })),
        "{err}"
    );
    assert_eq!(
        level(&vm, &mm),
        before,
        "reserved, cached, physical, mapped"
    );
    // The hole is whole and mapped as before: the retry lands at its high
    // end again and maps exactly one chunk.
    let calls = mm.stats().chunks;
    let h = written(&mut mm, 3 * G, 6);
    assert_eq!(mm.stats().chunks.creates - calls.creates, 1);
    assert_eq!(mm.stats().chunks.maps - calls.maps, 1);
    let whole = written(&mut mm, G, 7); // granule 0: the hole's rest
    assert_eq!(mm.stats().chunks.creates - calls.creates, 2);
    assert!(intact(&mut mm, &h, 6) && intact(&mut mm, &whole, 7));
    assert!(intact(&mut mm, &fence, 3));
}
