//! Raw-address pins: the owner's `get_resource` flag and counted `RawPin`
//! guards held by second parties (a graph using an outside buffer).

mod common;

use common::*;
use mem_pools::{IoError, ManagedMemoryHandle, MemoryConfiguration, MemoryManagement, TargetRoom};
use mem_storage::HostStorage;

type Manager = MemoryManagement<HostStorage>;

/// A 10 KiB buffer left on an outdated 64 KiB page (the pool grew).
fn on_an_outdated_page() -> (Manager, ManagedMemoryHandle, ManagedMemoryHandle) {
    let mut mm = manager(growable());
    let old = mm.reserve(10 * KIB).unwrap();
    let big = mm.reserve(100 * KIB).unwrap(); // 64 KiB pages → 128 KiB
    assert!(mm.has_outdated());
    (mm, old, big)
}

fn moves(mm: &mut Manager) -> usize {
    mm.plan_relocation(TargetRoom::MayAllocate).moves()
}

#[test]
fn releasing_the_owners_raw_flag_keeps_a_second_partys_raw_pin() {
    let (mut mm, old, _big) = on_an_outdated_page();
    let _ptr = mm.get_resource(old.binding(), None, None).unwrap();
    let graph = mm.raw_pin(old.binding()).unwrap();
    assert_eq!(mm.raw_pins(old.binding()).unwrap(), 2);
    mm.release_raw(old.binding()).unwrap();
    assert_eq!(mm.raw_pins(old.binding()).unwrap(), 1);
    assert_eq!(moves(&mut mm), 0, "the graph's pin still holds the page");
    drop(graph);
    assert_eq!(moves(&mut mm), 1, "the graph is gone: the buffer may move");
}

#[test]
fn dropping_a_raw_pin_keeps_the_owners_raw_flag() {
    let (mut mm, old, _big) = on_an_outdated_page();
    let graph = mm.raw_pin(old.binding()).unwrap();
    let _ptr = mm.get_resource(old.binding(), None, None).unwrap();
    drop(graph);
    mm.drain_drops();
    assert_eq!(mm.raw_pins(old.binding()).unwrap(), 1);
    assert_eq!(moves(&mut mm), 0);
    mm.release_raw(old.binding()).unwrap();
    assert_eq!(moves(&mut mm), 1);
}

#[test]
fn taking_many_raw_addresses_is_one_flag_that_one_release_raw_clears() {
    let (mut mm, old, _big) = on_an_outdated_page();
    for _ in 0..3 {
        let _ptr = mm.get_resource(old.binding(), None, None).unwrap();
    }
    assert_eq!(mm.raw_pins(old.binding()).unwrap(), 1);
    mm.release_raw(old.binding()).unwrap();
    mm.release_raw(old.binding()).unwrap();
    assert_eq!(mm.raw_pins(old.binding()).unwrap(), 0);
    assert_eq!(moves(&mut mm), 1);
}

#[test]
fn each_raw_pin_counts_once_and_the_page_moves_after_the_last_drops_on_another_thread() {
    let (mut mm, old, _big) = on_an_outdated_page();
    let (_ptr, first) = mm.get_resource_pinned(old.binding(), None, None).unwrap();
    let second = mm.raw_pin(old.binding()).unwrap();
    assert_eq!(mm.raw_pins(old.binding()).unwrap(), 2);
    std::thread::spawn(move || drop(first)).join().unwrap();
    assert_eq!(moves(&mut mm), 0);
    assert_eq!(mm.raw_pins(old.binding()).unwrap(), 1);
    std::thread::spawn(move || drop(second)).join().unwrap();
    assert_eq!(moves(&mut mm), 1);
}

#[test]
fn a_raw_pin_dropped_after_its_memory_was_freed_releases_nothing_else() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let a = mm.reserve(64).unwrap();
    let stale_pin = mm.raw_pin(a.binding()).unwrap();
    let a_binding = a.binding();
    drop(a);
    mm.drain_drops();
    let b = mm.reserve(64).unwrap();
    let _b_pin = mm.raw_pin(b.binding()).unwrap();
    drop(stale_pin);
    mm.drain_drops();
    assert_eq!(mm.raw_pins(b.binding()).unwrap(), 1);
    assert!(matches!(
        mm.raw_pins(a_binding),
        Err(IoError::StaleBinding { .. })
    ));
}

#[test]
fn a_stale_or_foreign_binding_is_refused_and_pins_nothing() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let mut other = manager(MemoryConfiguration::SubSlices);
    let h = mm.reserve(64).unwrap();
    let foreign = other.reserve(64).unwrap();
    assert!(matches!(
        mm.raw_pin(foreign.binding()),
        Err(IoError::ForeignBinding { .. })
    ));
    assert_eq!(other.raw_pins(foreign.binding()).unwrap(), 0);
    let binding = h.binding();
    drop(h);
    assert!(matches!(
        mm.raw_pin(binding),
        Err(IoError::StaleBinding { .. })
    ));
}

#[test]
fn bind_refuses_to_retire_or_free_a_slot_a_raw_pin_names() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let reserved = mm.reserve(128).unwrap();
    let assigned = mm.reserve(64).unwrap();
    let on_assigned = mm.raw_pin(assigned.binding()).unwrap();
    let refused = mm.try_bind(reserved, assigned, 1).unwrap_err();
    assert_eq!(refused.error, IoError::AssignedPinned { size: 64 });
    let (reserved, assigned) = refused.into_handles();
    let on_reserved = mm.raw_pin(reserved.binding()).unwrap();
    drop(on_assigned);
    let refused = mm.try_bind(reserved, assigned, 1).unwrap_err();
    assert_eq!(refused.error, IoError::SharedReserved { holders: 2 });
    let (reserved, assigned) = refused.into_handles();
    drop(on_reserved);
    mm.try_bind(reserved, assigned.clone(), 1).unwrap();
    assert_eq!(mm.raw_pins(assigned.binding()).unwrap(), 0);
}

#[test]
fn the_owners_flag_follows_bound_memory_as_before() {
    let (mut mm, old, _big) = on_an_outdated_page();
    let _ptr = mm.get_resource(old.binding(), None, None).unwrap();
    let assigned = mm.reserve(64).unwrap();
    mm.bind(old, assigned.clone(), 1).unwrap();
    assert_eq!(mm.raw_pins(assigned.binding()).unwrap(), 1);
    assert_eq!(moves(&mut mm), 0);
    mm.release_raw(assigned.binding()).unwrap();
    assert!(moves(&mut mm) >= 1);
}
