//! Several graphs sharing one pool of graph memory (PyTorch's `pool=`).
//!
//! The rule (docs/capture.md): graphs of one pool never run concurrently,
//! and a graph's outputs are read before another graph of the pool replays.

mod common;

use common::fixtures::device_with_input;
use common::pass::{capture_once, capture_pass, replay_read};
use common::*;
use mem_capture::{Capture, CaptureError, GraphPool};

const S: u64 = 4 * KIB;

fn plus(seed: u8) -> Vec<u8> {
    pattern(6, S as usize)
        .iter()
        .map(|b| b.wrapping_add(seed))
        .collect()
}

/// Storage allocations made while capturing the second of two passes.
fn second_capture_allocs(share: bool) -> u64 {
    let (mut dev, mut backend, inp) = device_with_input(S, 6);
    let (g1, _o1) = capture_once(&mut dev, &mut backend, &inp, S, 1).unwrap();
    let before = dev.device_allocs();
    let mut capture = if share {
        Capture::sharing(g1.graph_pool())
    } else {
        Capture::new()
    };
    let (_g2, _o2) = capture_pass(&mut capture, &mut dev, &mut backend, &inp, S, 2).unwrap();
    dev.device_allocs() - before
}

#[test]
fn a_graph_sharing_a_pool_reuses_the_first_graphs_temporaries() {
    assert_eq!(
        second_capture_allocs(false),
        2,
        "alone: its temporary and its output"
    );
    assert_eq!(
        second_capture_allocs(true),
        1,
        "shared: only its output is new"
    );
}

#[test]
fn graphs_of_a_shared_pool_each_read_right_when_read_after_their_own_replay() {
    let (mut dev, mut backend, inp) = device_with_input(S, 6);
    let (g1, o1) = capture_once(&mut dev, &mut backend, &inp, S, 1).unwrap();
    let mut capture = Capture::sharing(g1.graph_pool());
    let (g2, o2) = capture_pass(&mut capture, &mut dev, &mut backend, &inp, S, 2).unwrap();
    for _ in 0..2 {
        assert_eq!(
            replay_read(&g1, &mut dev, &mut backend, &o1).unwrap(),
            plus(1)
        );
        assert_eq!(
            replay_read(&g2, &mut dev, &mut backend, &o2).unwrap(),
            plus(2)
        );
    }
}

#[test]
fn replaying_an_earlier_graph_overwrites_a_later_graphs_output_in_its_temporary() {
    let (mut dev, mut backend, inp) = device_with_input(S, 6);
    let (g1, _o1) = capture_once(&mut dev, &mut backend, &inp, S, 1).unwrap();
    // The second graph's only buffer lands on the first graph's temporary.
    let mut out = None;
    let mut capture = Capture::sharing(g1.graph_pool());
    let g2 = capture
        .run(
            &mut dev,
            &mut backend,
            |d| d.streams[0].reserve(S).map(drop).map_err(Into::into),
            |d, rec| {
                let o = d.streams[0].reserve(S)?;
                rec.fill(0, d.streams[0].get_storage(o.binding())?, 0x22)?;
                out = Some(o);
                Ok(())
            },
        )
        .unwrap();
    let o2 = out.unwrap();
    assert_eq!(
        replay_read(&g2, &mut dev, &mut backend, &o2).unwrap(),
        vec![0x22; S as usize]
    );
    g1.replay(&mut backend, &mut dev).unwrap();
    assert_eq!(
        read(&mut dev.streams[0], &o2, 4),
        vec![1; 4],
        "g1 filled its temporary"
    );
}

#[test]
fn a_lent_temporary_the_new_graph_did_not_take_is_pinned_again() {
    let (mut dev, mut backend, inp) = device_with_input(S, 6);
    let (g1, o1) = capture_once(&mut dev, &mut backend, &inp, S, 1).unwrap();
    let big = dev.streams[0].reserve(2 * S).unwrap();
    dev.streams[0]
        .write(big.binding(), &pattern(6, 2 * S as usize))
        .unwrap();
    let mut capture = Capture::sharing(g1.graph_pool());
    let (g2, o2) = capture_pass(&mut capture, &mut dev, &mut backend, &big, 2 * S, 2).unwrap();
    assert_eq!(g1.graph_pool().pinned_slices(), 4, "g1's two and g2's two");
    g1.verify(&mut dev).unwrap();
    assert_eq!(
        replay_read(&g1, &mut dev, &mut backend, &o1).unwrap(),
        plus(1)
    );
    let want: Vec<u8> = pattern(6, 2 * S as usize)
        .iter()
        .map(|b| b.wrapping_add(2))
        .collect();
    assert_eq!(replay_read(&g2, &mut dev, &mut backend, &o2).unwrap(), want);
}

#[test]
fn aborting_a_sharing_capture_pins_the_lent_temporaries_again() {
    let (mut dev, mut backend, inp) = device_with_input(S, 6);
    let (g1, o1) = capture_once(&mut dev, &mut backend, &inp, S, 1).unwrap();
    let mut capture = Capture::sharing(g1.graph_pool());
    capture.prepare(&mut dev).unwrap();
    assert_eq!(
        g1.graph_pool().pinned_slices(),
        1,
        "the temporary is lent to the window"
    );
    drop(dev.streams[0].reserve(S).unwrap());
    capture.abort(&mut dev, &mut backend);
    assert_eq!(g1.graph_pool().pinned_slices(), 2);
    assert_eq!(
        replay_read(&g1, &mut dev, &mut backend, &o1).unwrap(),
        plus(1)
    );
}

#[test]
fn a_lent_temporary_kept_by_someone_else_invalidates_the_graph_that_used_it() {
    let (mut dev, mut backend, inp) = device_with_input(S, 6);
    let (g1, _o1) = capture_once(&mut dev, &mut backend, &inp, S, 1).unwrap();
    let mut capture = Capture::sharing(g1.graph_pool());
    capture.prepare(&mut dev).unwrap();
    let kept = dev.streams[0].reserve(S).unwrap(); // takes the lent slice
    capture.abort(&mut dev, &mut backend);
    let err = g1.replay(&mut backend, &mut dev).unwrap_err();
    assert!(
        matches!(err, CaptureError::GraphMemoryInvalidated { why, .. } if why.contains("another allocation")),
        "{err}"
    );
    assert_eq!(backend.launches(), 0);
    drop(kept);
}

#[test]
fn dropping_one_graph_of_a_shared_pool_keeps_what_the_other_uses() {
    let (mut dev, mut backend, inp) = device_with_input(S, 6);
    let (g1, o1) = capture_once(&mut dev, &mut backend, &inp, S, 1).unwrap();
    let pool: GraphPool = g1.graph_pool().clone();
    let mut capture = Capture::sharing(&pool);
    let (g2, o2) = capture_pass(&mut capture, &mut dev, &mut backend, &inp, S, 2).unwrap();
    let pinned = pool.pinned_slices();
    drop(g1);
    assert!(pool.pinned_slices() < pinned, "g1's own output is unpinned");
    assert_eq!(
        replay_read(&g2, &mut dev, &mut backend, &o2).unwrap(),
        plus(2)
    );
    drop(g2);
    assert_eq!(pool.pinned_slices(), 0);
    dev.streams[0].drain_drops();
    assert_eq!(
        dev.streams[0].memory_usage().number_allocs,
        3,
        "input and the two outputs"
    );
    drop((o1, o2));
}

#[test]
fn sharing_a_pool_across_streams_with_other_pools_is_refused() {
    let (mut dev, mut backend, inp) = device_with_input(S, 6);
    let (g1, _o1) = capture_once(&mut dev, &mut backend, &inp, S, 1).unwrap();
    let mut other = HostDevice::new(2, 2);
    let mut capture = Capture::sharing(g1.graph_pool());
    let err = capture.prepare(&mut other).unwrap_err();
    assert_eq!(
        err,
        CaptureError::PoolCountChanged {
            expected: 1,
            found: 2
        }
    );
    assert!(!other.flag.is_recording());
    assert!(!other.streams[0].capture_state().active);
}
