//! Graph memory: exactly the touched slices are pinned, untouched buffers
//! keep their reuse, a dropped graph gives its memory back, and replay after
//! a reclaim reads the right bytes.

mod common;

use common::fixtures::{expected, input};
use common::pass::{capture_once, capture_pass, replay_read};
use common::*;
use mem_capture::{Capture, HostGraphBackend};

#[test]
fn capture_end_pins_exactly_the_touched_slices() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let before = dev.streams[0].reserve(10 * KIB).unwrap();
    let inp = input(&mut dev, 4 * KIB, 1);
    let (graph, out) = capture_once(&mut dev, &mut backend, &inp, 4 * KIB, 2).unwrap();
    // Touched: temp and out (warmup's slices reused by the recorded pass).
    assert_eq!(graph.pinned_slices(), 2);
    assert_eq!(graph.graph_pool().pinned_bytes(), 8 * KIB);
    assert!(
        before.can_mut() && inp.can_mut(),
        "untouched buffers are not the graph's"
    );
    assert!(!out.can_mut(), "the graph holds the output it writes");
}

#[test]
fn an_untouched_pre_existing_buffer_keeps_its_reuse() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 4 * KIB, 1);
    let old = dev.streams[0].reserve(8 * KIB).unwrap();
    let old_view = dev.streams[0].get_storage(old.binding()).unwrap();
    let (_graph, _out) = capture_once(&mut dev, &mut backend, &inp, 4 * KIB, 2).unwrap();
    assert!(old.can_mut());
    drop(old);
    let again = dev.streams[0].reserve(8 * KIB).unwrap();
    assert_eq!(
        dev.streams[0].get_storage(again.binding()).unwrap(),
        old_view,
        "its slice is reused"
    );
}

#[test]
fn a_dropped_graph_releases_its_memory() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 4 * KIB, 1);
    let (graph, out) = capture_once(&mut dev, &mut backend, &inp, 4 * KIB, 2).unwrap();
    drop(out);
    dev.streams[0].cleanup(true);
    assert_eq!(
        dev.streams[0].memory_usage().number_allocs,
        3,
        "input + the graph's two"
    );
    let pool = graph.graph_pool().clone();
    drop(graph);
    assert_eq!(pool.pinned_slices(), 0);
    dev.streams[0].cleanup(true);
    assert_eq!(dev.streams[0].memory_usage().number_allocs, 1);
    assert_eq!(
        dev.resource.stats().current_count,
        1,
        "the graph's pages went back"
    );
}

#[test]
fn replay_after_reclaim_still_reads_the_right_bytes() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    // A buffer on a sliced page that growth will leave outdated.
    let mover = dev.streams[0].reserve(10 * KIB).unwrap();
    dev.streams[0]
        .write(mover.binding(), &pattern(8, 10 * KIB as usize))
        .unwrap();
    // A static input the graph reads but does not reserve (its own page).
    let inp = input(&mut dev, 2 * MIB, 5);
    let mut capture = Capture::new();
    capture.uses(0, inp.binding()).unwrap();
    let (graph, out) =
        capture_pass(&mut capture, &mut dev, &mut backend, &inp, 10 * KIB, 9).unwrap();
    assert_eq!(graph.outside_buffers(), 1);
    let want = expected(&mut dev, &inp, 9)[..10 * KIB as usize].to_vec();
    // Grow the sliced pool past its page size: the mover's page is outdated.
    let big = dev.streams[0].reserve(100 * KIB).unwrap();
    assert!(dev.streams[0].has_outdated());
    // Reclaim: relocate, then give back every empty page.
    assert_eq!(dev.relocate_stream(0), 1, "the mover moved");
    dev.streams[0].cleanup(true);
    assert!(!dev.streams[0].has_outdated());
    assert_eq!(
        replay_read(&graph, &mut dev, &mut backend, &out).unwrap(),
        want
    );
    assert_eq!(
        read(&mut dev.streams[0], &mover, 10 * KIB as usize),
        pattern(8, 10 * KIB as usize)
    );
    drop(big);
}

#[test]
fn the_pool_never_hands_graph_memory_to_anyone_else_while_the_graph_lives() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 4 * KIB, 1);
    let (graph, out) = capture_once(&mut dev, &mut backend, &inp, 4 * KIB, 2).unwrap();
    let graph_pages: Vec<_> = graph
        .backend_graph()
        .ops()
        .iter()
        .filter_map(|op| match op {
            mem_capture::HostOp::Fill { dst, .. } => Some(dst.id),
            _ => None,
        })
        .chain([dev.streams[0].get_storage(out.binding()).unwrap().id])
        .collect();
    // Persistent reservations of the very sizes the graph holds.
    dev.streams[0].mode(mem_pools::MemoryAllocationMode::Persistent);
    let others: Vec<_> = (0..8)
        .map(|_| dev.streams[0].reserve(4 * KIB).unwrap())
        .collect();
    dev.streams[0].mode(mem_pools::MemoryAllocationMode::Auto);
    for other in &others {
        let page = dev.streams[0].get_storage(other.binding()).unwrap().id;
        assert!(!graph_pages.contains(&page), "graph memory was handed out");
    }
    let want = expected(&mut dev, &inp, 2);
    assert_eq!(
        replay_read(&graph, &mut dev, &mut backend, &out).unwrap(),
        want
    );
}

#[test]
fn a_graph_dropped_on_another_thread_releases_its_memory() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 4 * KIB, 1);
    let (graph, out) = capture_once(&mut dev, &mut backend, &inp, 4 * KIB, 2).unwrap();
    drop(out);
    std::thread::spawn(move || drop(graph)).join().unwrap();
    dev.streams[0].drain_drops();
    assert_eq!(
        dev.streams[0].memory_usage().number_allocs,
        1,
        "only the input is left"
    );
}
