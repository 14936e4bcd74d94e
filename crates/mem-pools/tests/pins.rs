//! Graph pins: the handles `capture_end` returns are holders of their own,
//! and the pin ends with the graph, not with the memory.

mod common;

use common::*;
use mem_pools::{IoError, ManagedMemoryHandle, MemoryManagement, StorageCopyQueue, TargetRoom};
use mem_storage::HostStorage;

type Manager = MemoryManagement<HostStorage>;

/// A 10 KiB user buffer on a 64 KiB page of the growable pool, touched by a
/// capture (bound inside the window) and so pinned by the returned graph;
/// then the pool grows, leaving that page outdated.
fn pinned_on_an_outdated_page() -> (Manager, ManagedMemoryHandle, Vec<ManagedMemoryHandle>) {
    let mut mm = manager(growable());
    let reserved = mm.reserve(10 * KIB).unwrap();
    let user = mm.reserve(64).unwrap();
    mm.capture_begin();
    mm.bind(reserved, user.clone(), 1).unwrap();
    mm.capture_priming_end();
    let graph = mm.capture_end();
    assert_eq!(graph.len(), 1);
    mm.write(user.binding(), &pattern(3, 10 * KIB as usize))
        .unwrap();
    let big = mm.reserve(100 * KIB).unwrap(); // 64 KiB pages → 128 KiB
    drop(big);
    mm.drain_drops();
    assert!(mm.has_outdated());
    (mm, user, graph)
}

fn relocate(mm: &mut Manager) -> usize {
    let plan = mm.plan_relocation(TargetRoom::MayAllocate);
    let landed = mm.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    mm.commit_relocation(landed).unwrap().moved_slices
}

#[test]
fn dropping_the_graphs_handles_unpins_while_the_users_buffer_stays_live() {
    let (mut mm, user, graph) = pinned_on_an_outdated_page();
    let before = mm.get_storage(user.binding()).unwrap();
    assert_eq!(mm.relocation_state().shape.outdated_pinned, 1);
    assert!(
        mm.plan_relocation(TargetRoom::MayAllocate).is_empty(),
        "a pinned page does not move"
    );
    drop(graph);
    mm.drain_drops();
    assert_eq!(mm.relocation_state().shape.outdated_pinned, 0);
    assert_eq!(
        mm.memory_usage().number_allocs,
        1,
        "the user's buffer lives"
    );
    assert_eq!(relocate(&mut mm), 1, "the unpinned page moves");
    assert!(!mm.has_outdated());
    assert_ne!(mm.get_storage(user.binding()).unwrap(), before);
    let mut out = vec![0; 10 * KIB as usize];
    mm.read(user.binding(), &mut out).unwrap();
    assert_eq!(
        out,
        pattern(3, 10 * KIB as usize),
        "the bytes moved with it"
    );
}

#[test]
fn a_buffer_dropped_before_its_graph_is_freed_exactly_once_when_the_graph_drops() {
    let (mut mm, user, graph) = pinned_on_an_outdated_page();
    let binding = user.binding();
    drop(user);
    assert_eq!(mm.drain_drops(), 0, "the graph still holds the memory");
    assert_eq!(mm.get_storage(binding).unwrap().size(), 10 * KIB);
    let frees = mm.stats().allocation_count.freed;
    drop(graph);
    assert_eq!(mm.drain_drops(), 1);
    assert_eq!(mm.stats().allocation_count.freed, frees + 1);
    assert!(matches!(
        mm.get_storage(binding),
        Err(IoError::StaleBinding { .. })
    ));
    assert_eq!(mm.memory_usage().number_allocs, 0);
    assert!(!mm.has_outdated(), "the emptied outdated page went back");
    mm.cleanup(true);
    assert_eq!(mm.stats().allocation_count.freed, frees + 1);
    assert_eq!(mm.memory_usage().bytes_reserved, 0);
}

#[test]
fn a_graph_dropped_before_the_buffer_frees_nothing_until_the_buffer_drops() {
    let (mut mm, user, graph) = pinned_on_an_outdated_page();
    drop(graph);
    assert_eq!(mm.drain_drops(), 0);
    drop(user);
    assert_eq!(mm.drain_drops(), 1);
    assert_eq!(mm.memory_usage().number_allocs, 0);
}

#[test]
fn can_mut_counts_the_user_the_graph_and_their_clones_as_one_set_of_holders() {
    let (mut mm, user, graph) = pinned_on_an_outdated_page();
    let pin = &graph[0];
    assert!(pin.is_pin() && !user.is_pin());
    assert_eq!(pin.binding(), user.binding());
    assert_eq!(pin.size(), user.size());
    assert!(!user.can_mut(), "the graph holds it too");
    assert!(!pin.can_mut(), "the user holds it too");
    let pin_clone = pin.clone();
    drop(user);
    assert!(!pin.can_mut(), "a clone of the pin is another holder");
    drop(pin_clone);
    assert!(pin.can_mut(), "the graph is the only holder now");
    mm.drain_drops();
    assert_eq!(mm.relocation_state().shape.outdated_pinned, 1);
}

#[test]
fn every_clone_of_a_pin_handle_keeps_the_pin_until_the_last_one_drops() {
    let (mut mm, user, graph) = pinned_on_an_outdated_page();
    let again = graph.clone();
    drop(graph);
    mm.drain_drops();
    assert_eq!(mm.relocation_state().shape.outdated_pinned, 1);
    assert!(mm.plan_relocation(TargetRoom::MayAllocate).is_empty());
    drop(again);
    mm.drain_drops();
    assert_eq!(mm.relocation_state().shape.outdated_pinned, 0);
    assert_eq!(relocate(&mut mm), 1);
    assert!(user.can_mut());
}

#[test]
fn a_bind_touching_pinned_memory_in_a_later_window_is_refused_and_pins_nothing_new() {
    let (mut mm, user, graph) = pinned_on_an_outdated_page();
    let other = mm.reserve(64).unwrap();
    mm.capture_begin();
    let binding = user.binding();
    let err = mm.bind(user, other.clone(), 4).unwrap_err();
    assert_eq!(
        err,
        IoError::SharedReserved { holders: 2 },
        "user and graph"
    );
    mm.capture_priming_end();
    assert!(mm.capture_end().is_empty(), "nothing was touched");
    assert_eq!(mm.get_cursor(binding).unwrap(), 1, "nothing changed");
    drop(graph);
    assert_eq!(
        mm.drain_drops(),
        1,
        "the refused bind dropped the user's handle"
    );
    assert!(!mm.has_outdated());
}

#[test]
fn binding_away_memory_a_graph_pins_is_refused_even_through_the_pin_handle() {
    let (mut mm, user, graph) = pinned_on_an_outdated_page();
    let target = mm.reserve(64).unwrap();
    drop(user);
    mm.drain_drops();
    let err = mm.bind(graph[0].clone(), target.clone(), 9).unwrap_err();
    assert_eq!(err, IoError::SharedReserved { holders: 2 });
    assert_eq!(mm.get_cursor(graph[0].binding()).unwrap(), 1);
    assert_eq!(mm.memory_usage().number_allocs, 2);
}
