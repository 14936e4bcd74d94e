//! Outside buffers (`Capture::uses`): each graph holds its own raw pin on
//! them, so the page stays put exactly while some graph — or the owner's
//! `get_resource` — still pins it, and moves again once none does; a
//! capture that fails at `end` pins nothing.

mod common;

use common::fixtures::{expected, input};
use common::pass::{capture_pass, replay_read};
use common::*;
use mem_capture::{Capture, CapturedGraph, HostGraph, HostGraphBackend};
use mem_pools::ManagedMemoryHandle;

/// A graph that only uses `inp` (reserves nothing in its window), so the
/// one thing keeping `inp`'s page in place is the graph's pin on it.
fn graph_using(
    dev: &mut HostDevice,
    backend: &mut HostGraphBackend,
    inp: &ManagedMemoryHandle,
) -> CapturedGraph<HostGraph> {
    let view = dev.streams[0].get_storage(inp.binding()).unwrap();
    let mut capture = Capture::new();
    capture.uses(0, inp.binding()).unwrap();
    let graph = capture
        .run(dev, backend, |_| Ok(()), |_, rec| rec.copy(0, view, view))
        .unwrap();
    assert_eq!(graph.pinned_slices(), 0, "the window reserved nothing");
    graph
}

/// Grow the pool's page size, so `inp`'s page is outdated and relocation
/// wants to move it.
fn outdate(dev: &mut HostDevice) -> ManagedMemoryHandle {
    let big = dev.streams[0].reserve(100 * KIB).unwrap();
    assert!(dev.streams[0].has_outdated());
    big
}

/// Run relocation; whether it moved `inp` (its bytes survive either way).
fn relocation_moves(dev: &mut HostDevice, inp: &ManagedMemoryHandle) -> bool {
    let before = dev.streams[0].get_storage(inp.binding()).unwrap();
    dev.relocate_stream(0);
    let after = dev.streams[0].get_storage(inp.binding()).unwrap();
    assert_eq!(
        read(&mut dev.streams[0], inp, 10 * KIB as usize),
        pattern(5, 10 * KIB as usize)
    );
    after != before
}

/// The owner takes `inp`'s raw address (its one `get_resource` flag).
fn take_raw_address(dev: &mut HostDevice, inp: &ManagedMemoryHandle) {
    let _address = dev.streams[0]
        .get_resource(inp.binding(), None, None)
        .unwrap();
}

fn raw_pins(dev: &mut HostDevice, inp: &ManagedMemoryHandle) -> u64 {
    dev.streams[0].drain_drops();
    dev.streams[0].raw_pins(inp.binding()).unwrap()
}

#[test]
fn an_outside_buffer_the_graph_uses_never_moves_while_it_lives() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 10 * KIB, 5);
    let mut capture = Capture::new();
    capture.uses(0, inp.binding()).unwrap();
    let (graph, out) =
        capture_pass(&mut capture, &mut dev, &mut backend, &inp, 10 * KIB, 9).unwrap();
    let view = dev.streams[0].get_storage(inp.binding()).unwrap();
    let _big = dev.streams[0].reserve(100 * KIB).unwrap();
    assert!(dev.streams[0].has_outdated());
    assert_eq!(
        dev.relocate_stream(0),
        0,
        "its page is pinned by the raw address"
    );
    assert_eq!(dev.streams[0].get_storage(inp.binding()).unwrap(), view);
    let want = expected(&mut dev, &inp, 9);
    assert_eq!(
        replay_read(&graph, &mut dev, &mut backend, &out).unwrap(),
        want
    );
}

#[test]
fn a_capture_that_fails_at_end_leaves_its_outside_buffers_movable() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 10 * KIB, 5);
    let mut capture = Capture::new();
    capture.uses(0, inp.binding()).unwrap();
    capture.uses(3, inp.binding()).unwrap(); // no pool 3: `end` fails
    assert!(capture_pass(&mut capture, &mut dev, &mut backend, &inp, 10 * KIB, 9).is_err());
    let _big = dev.streams[0].reserve(100 * KIB).unwrap();
    assert!(dev.streams[0].has_outdated());
    assert!(
        dev.relocate_stream(0) > 0,
        "no graph uses the buffer, so nothing pins its page"
    );
    assert_eq!(
        read(&mut dev.streams[0], &inp, 10 * KIB as usize),
        pattern(5, 10 * KIB as usize)
    );
}

#[test]
fn a_dropped_graph_leaves_its_outside_buffer_movable() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 10 * KIB, 5);
    let graph = graph_using(&mut dev, &mut backend, &inp);
    let _big = outdate(&mut dev);
    assert_eq!(raw_pins(&mut dev, &inp), 1);
    assert!(!relocation_moves(&mut dev, &inp), "the graph pins it");
    drop(graph);
    assert_eq!(raw_pins(&mut dev, &inp), 0, "the graph's pin ended with it");
    assert!(relocation_moves(&mut dev, &inp));
}

#[test]
fn an_outside_buffer_stays_in_place_while_another_graph_still_uses_it() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 10 * KIB, 5);
    let first = graph_using(&mut dev, &mut backend, &inp);
    let second = graph_using(&mut dev, &mut backend, &inp);
    let _big = outdate(&mut dev);
    assert_eq!(raw_pins(&mut dev, &inp), 2);
    drop(first);
    assert_eq!(
        raw_pins(&mut dev, &inp),
        1,
        "the second graph's pin is left"
    );
    assert!(!relocation_moves(&mut dev, &inp));
    second.verify(&mut dev).unwrap();
    drop(second);
    assert!(relocation_moves(&mut dev, &inp));
}

#[test]
fn the_owners_raw_address_and_a_graphs_pin_each_keep_the_page_in_place() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 10 * KIB, 5);
    take_raw_address(&mut dev, &inp);
    let graph = graph_using(&mut dev, &mut backend, &inp);
    let _big = outdate(&mut dev);
    assert_eq!(
        raw_pins(&mut dev, &inp),
        2,
        "the owner's flag and the graph's pin"
    );
    dev.streams[0].release_raw(inp.binding()).unwrap();
    assert_eq!(raw_pins(&mut dev, &inp), 1);
    assert!(
        !relocation_moves(&mut dev, &inp),
        "the owner releasing its address does not end the graph's pin"
    );
    take_raw_address(&mut dev, &inp);
    drop(graph);
    assert_eq!(raw_pins(&mut dev, &inp), 1);
    assert!(
        !relocation_moves(&mut dev, &inp),
        "dropping the graph does not end the owner's raw address"
    );
    dev.streams[0].release_raw(inp.binding()).unwrap();
    assert!(relocation_moves(&mut dev, &inp));
}

#[test]
fn a_graph_dropped_on_another_thread_releases_its_outside_pin() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 10 * KIB, 5);
    let graph = graph_using(&mut dev, &mut backend, &inp);
    let _big = outdate(&mut dev);
    std::thread::spawn(move || drop(graph)).join().unwrap();
    assert!(relocation_moves(&mut dev, &inp));
}

#[test]
fn binding_over_an_outside_buffer_is_refused_until_the_graph_using_it_drops() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 10 * KIB, 5);
    let graph = graph_using(&mut dev, &mut backend, &inp);
    let reserved = dev.streams[0].reserve(10 * KIB).unwrap();
    let refused = dev.streams[0]
        .try_bind(reserved, inp.clone(), 0)
        .unwrap_err();
    assert!(
        matches!(refused.error, mem_pools::IoError::AssignedPinned { size } if size == 10 * KIB),
        "{:?}",
        refused.error
    );
    assert_eq!(
        read(&mut dev.streams[0], &inp, 10 * KIB as usize),
        pattern(5, 10 * KIB as usize),
        "a refused bind leaves the buffer as it was"
    );
    graph.verify(&mut dev).unwrap();
    drop(graph);
    let (reserved, _) = refused.into_handles();
    dev.streams[0].try_bind(reserved, inp, 0).unwrap();
}
