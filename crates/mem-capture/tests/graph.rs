//! `CapturedGraph` and the host backend: replay, refusals, invalidation.

mod common;

use common::fixtures::device_with_input;
use common::pass::{capture_once, capture_pass, replay_read};
use common::*;
use mem_capture::{Capture, CaptureError};

#[test]
fn a_host_graph_records_without_executing_and_replays_on_demand() {
    let (mut dev, mut backend, inp) = device_with_input(4 * KIB, 2);
    let (graph, out) = capture_once(&mut dev, &mut backend, &inp, 4 * KIB, 1).unwrap();
    assert_eq!(graph.backend_graph().ops().len(), 2);
    assert_eq!(
        read(&mut dev.streams[0], &out, 8),
        vec![0; 8],
        "nothing ran yet"
    );
    let want: Vec<u8> = pattern(2, 4 * KIB as usize).iter().map(|b| b + 1).collect();
    for _ in 0..3 {
        assert_eq!(
            replay_read(&graph, &mut dev, &mut backend, &out).unwrap(),
            want
        );
    }
    assert_eq!(backend.launches(), 3);
}

#[test]
fn graph_memory_cannot_be_rebound_or_moved_while_the_graph_lives() {
    let (mut dev, mut backend, inp) = device_with_input(4 * KIB, 2);
    let (graph, out) = capture_once(&mut dev, &mut backend, &inp, 4 * KIB, 1).unwrap();
    // Handing the output's handle new memory would strand the graph: refused.
    let fresh = dev.streams[0].reserve(4 * KIB).unwrap();
    let err = dev.streams[0].bind(fresh, out.clone(), 1).unwrap_err();
    assert!(
        matches!(err, mem_pools::IoError::AssignedPinned { .. }),
        "{err}"
    );
    // Giving the output's memory to another handle is refused too.
    let other = dev.streams[0].reserve(64).unwrap();
    assert!(dev.streams[0].bind(out.clone(), other, 1).is_err());
    graph.verify(&mut dev).unwrap();
    let want: Vec<u8> = pattern(2, 4 * KIB as usize).iter().map(|b| b + 1).collect();
    assert_eq!(
        replay_read(&graph, &mut dev, &mut backend, &out).unwrap(),
        want
    );
}

#[test]
fn the_graph_refuses_to_replay_after_an_outside_buffer_it_uses_was_freed() {
    let (mut dev, mut backend, inp) = device_with_input(4 * KIB, 2);
    let mut capture = Capture::new();
    capture.uses(0, inp.binding()).unwrap();
    let (graph, _out) =
        capture_pass(&mut capture, &mut dev, &mut backend, &inp, 4 * KIB, 1).unwrap();
    graph.verify(&mut dev).unwrap();
    drop(inp);
    let err = graph.replay(&mut backend, &mut dev).unwrap_err();
    assert!(
        matches!(err, CaptureError::GraphMemoryInvalidated { why, .. } if why.contains("freed")),
        "{err}"
    );
    assert_eq!(backend.launches(), 0);
}

#[test]
fn declaring_an_outside_buffer_after_sealing_is_refused() {
    let (mut dev, mut backend, inp) = device_with_input(4 * KIB, 2);
    let mut capture = Capture::new();
    let (_graph, _out) =
        capture_pass(&mut capture, &mut dev, &mut backend, &inp, 4 * KIB, 1).unwrap();
    let err = capture.uses(0, inp.binding()).unwrap_err();
    assert!(
        matches!(err, CaptureError::WrongStage { call: "uses", .. }),
        "{err}"
    );
}

#[test]
fn an_outside_buffer_in_a_pool_the_streams_lack_aborts_the_capture() {
    let (mut dev, mut backend, inp) = device_with_input(4 * KIB, 2);
    let mut capture = Capture::new();
    capture.uses(3, inp.binding()).unwrap();
    let err = capture_pass(&mut capture, &mut dev, &mut backend, &inp, 4 * KIB, 1).unwrap_err();
    assert_eq!(err, CaptureError::UnknownPool { pool: 3, pools: 1 });
    assert!(!dev.flag.is_recording());
    assert!(!dev.streams[0].capture_state().active);
}

#[test]
fn streams_offering_other_pools_cannot_replay_the_graph() {
    let (mut dev, mut backend, inp) = device_with_input(4 * KIB, 2);
    let (graph, _out) = capture_once(&mut dev, &mut backend, &inp, 4 * KIB, 1).unwrap();
    let mut other = HostDevice::new(2, 2);
    let err = graph.replay(&mut backend, &mut other).unwrap_err();
    assert_eq!(
        err,
        CaptureError::PoolCountChanged {
            expected: 1,
            found: 2
        }
    );
}
