//! CubeCL's guard tests of `memory_manage.rs` (0.12.0-pre.1), rewritten
//! against the adapter (the rest are in `ported.rs`).

mod common;

use common::*;
use cubecl_server::memory_management::{Cleanup, ManagedMemoryHandle, PageUpdate};
use gpumem_cubecl::MemoryManagement;

fn reserve(memory: &mut MemoryManagement<HostStorage>, size: u64) -> ManagedMemoryHandle {
    memory
        .reserve(size, PageUpdate::Allow, &mut graph())
        .unwrap()
}

#[test]
fn a_guarded_allocation_is_never_handed_out_again() {
    let mut memory = exclusive();
    let recorded = reserve(&mut memory, 1024);
    let guard = memory
        .guard(recorded.descriptor().location())
        .expect("the memory holds the allocation");
    drop(recorded);
    let before = memory.memory_report().usage().bytes_reserved;
    let other = reserve(&mut memory, 1024);
    let after = memory.memory_report().usage().bytes_reserved;
    assert!(
        after > before,
        "the guarded allocation was handed out again"
    );
    memory.cleanup(Cleanup::Explicit, &mut graph());
    assert_eq!(
        memory.memory_report().usage().bytes_reserved,
        after,
        "the guarded allocation was released"
    );
    drop(guard);
    drop(other);
    memory.cleanup(Cleanup::Explicit, &mut graph());
    assert_eq!(memory.memory_report().usage().bytes_reserved, 0);
}

#[test]
fn a_guard_leaves_in_place_updates_alone() {
    let mut memory = exclusive();
    let cache = reserve(&mut memory, 1024);
    let _guard = memory.guard(cache.descriptor().location());
    assert!(
        cache.can_mut(),
        "a graph replaying against a buffer must not stop it being updated in place"
    );
}
