//! Guards and relocation, with CubeCL's semantics, over a fake CubeCL
//! storage on host memory (the rest of the public API is `api.rs`).

mod common;

use common::*;
use cubecl_server::memory_management::relocation::{RelocationNeed, RelocationReason};
use cubecl_server::memory_management::{MemoryLocation, PageUpdate};

#[test]
fn a_guard_keeps_a_dropped_allocation_from_reuse_until_the_guard_drops() {
    let mut memory = exclusive();
    let recorded = memory
        .reserve(1024, PageUpdate::Allow, &mut graph())
        .unwrap();
    let location = recorded.descriptor().location();
    let guard = memory.guard(location).expect("an allocation is there");
    drop(recorded);

    let buffers = memory.storage().allocs;
    let other = memory
        .reserve(1024, PageUpdate::Allow, &mut graph())
        .unwrap();
    assert_eq!(
        memory.storage().allocs,
        buffers + 1,
        "the guarded one was reused"
    );

    drop(guard);
    drop(other);
    let _again = memory
        .reserve(1024, PageUpdate::Allow, &mut graph())
        .unwrap();
    assert_eq!(
        memory.storage().allocs,
        buffers + 1,
        "freed memory is reused"
    );
}

#[test]
fn a_guard_of_a_location_never_handed_out_is_none() {
    let mut memory = adaptive();
    assert!(memory.guard(MemoryLocation::uninit()).is_none());
    assert!(memory.guard(MemoryLocation::new(0, 0, 99)).is_none());
}

#[test]
fn relocation_empties_outdated_pages_through_the_runtimes_copy_queue() {
    let mut memory = adaptive();
    assert_eq!(memory.relocation_need(), RelocationNeed::Nothing);
    let old = memory
        .reserve(MIB, PageUpdate::Allow, &mut graph())
        .unwrap();
    memory
        .get_resource(old.clone().binding(), None, None)
        .unwrap()
        .write(b"kept across the move");
    // Outgrows the 2 MiB pages: the page holding `old` is outdated now.
    let _grown = memory
        .reserve(3 * MIB, PageUpdate::Allow, &mut graph())
        .unwrap();
    assert!(memory.has_outdated());
    // The device states no capacity, so there is no pressure to judge by.
    assert_eq!(memory.relocation_need(), RelocationNeed::Nothing);

    let mut copies = HostCopies::default();
    memory.relocate(&mut copies, RelocationReason::Explicit, &mut graph());
    assert_eq!(copies.copies, 1);
    assert!(!memory.has_outdated());
    let moved = memory.get_resource(old.binding(), None, None).unwrap();
    assert_eq!(moved.read(20), b"kept across the move");
}

#[test]
fn an_allocation_with_a_binding_out_is_not_relocated() {
    let mut memory = adaptive();
    let old = memory
        .reserve(MIB, PageUpdate::Allow, &mut graph())
        .unwrap();
    let binding = old.clone().binding();
    let _grown = memory
        .reserve(3 * MIB, PageUpdate::Allow, &mut graph())
        .unwrap();

    let mut copies = HostCopies::default();
    memory.relocate(&mut copies, RelocationReason::Explicit, &mut graph());
    assert_eq!(copies.copies, 0);
    assert!(memory.has_outdated());
    drop(binding);
}

#[test]
fn a_guard_asked_after_the_allocation_was_given_back_reclaims_its_bytes() {
    let mut memory = adaptive();
    let temporary = memory
        .reserve(4096, PageUpdate::Allow, &mut graph())
        .unwrap();
    let location = temporary.descriptor().location();
    let bytes = memory.get_storage(temporary.clone().binding()).unwrap();
    drop(temporary);
    // A reservation sweeps it back to gpumem's engine, as a recording's next
    // allocation would; this one goes to another pool.
    let _other = memory
        .reserve(MIB, PageUpdate::Allow, &mut graph())
        .unwrap();

    let guard = memory
        .guard(location)
        .expect("its bytes are free: re-claimed");
    let sentinel = memory
        .reserve(4096, PageUpdate::Allow, &mut graph())
        .unwrap();
    let placed = memory.get_storage(sentinel.clone().binding()).unwrap();
    let overlaps = placed.id == bytes.id
        && placed.offset() < bytes.offset() + bytes.size()
        && bytes.offset() < placed.offset() + placed.size();
    assert!(!overlaps, "a new allocation landed on the guarded bytes");
    assert_eq!(
        memory.memory_report().usage().bytes_in_use,
        MIB + 4096,
        "the guarded bytes count as free, as CubeCL's guarded free slices do"
    );
    drop(guard);
}

#[test]
fn a_guard_on_bytes_already_taken_again_is_none() {
    let mut memory = adaptive();
    let temporary = memory
        .reserve(4096, PageUpdate::Allow, &mut graph())
        .unwrap();
    let location = temporary.descriptor().location();
    drop(temporary);
    let _reuses = memory
        .reserve(4096, PageUpdate::Allow, &mut graph())
        .unwrap();
    assert!(memory.guard(location).is_none());
}
