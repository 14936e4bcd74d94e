//! Capture calls in every wrong order, and relocation while recording.
//!
//! The engine documents its wrong-order calls as no-ops (a second begin
//! keeps the first record; priming end without a capture or twice does
//! nothing; end without a capture returns no handle); the model encodes
//! exactly that, so every sequence runs through it with every invariant
//! checked after every call.

use mem_pools::{CaptureState, MemoryAllocationMode, StorageCopyQueue, TargetRoom};
use mem_reliability::{Limits, Op, World};

#[derive(Debug, Clone, Copy)]
enum Call {
    Begin,
    PrimingEnd,
    End,
}

fn op(call: Call) -> Op {
    match call {
        Call::Begin => Op::CaptureBegin { stream: 0 },
        Call::PrimingEnd => Op::CapturePrimingEnd { stream: 0 },
        Call::End => Op::CaptureEnd { stream: 0 },
    }
}

/// Every sequence of 1 to 4 capture calls.
fn sequences() -> Vec<Vec<Call>> {
    let calls = [Call::Begin, Call::PrimingEnd, Call::End];
    let mut all: Vec<Vec<Call>> = vec![vec![]];
    let mut out = Vec::new();
    for _ in 0..4 {
        all = all
            .iter()
            .flat_map(|s| {
                calls.iter().map(move |&c| {
                    let mut s = s.clone();
                    s.push(c);
                    s
                })
            })
            .collect();
        out.extend(all.iter().cloned());
    }
    out
}

#[test]
fn every_order_of_capture_calls_keeps_every_invariant() {
    let sequences = sequences();
    assert_eq!(sequences.len(), 3 + 9 + 27 + 81);
    for sequence in sequences {
        let mut world = World::new(Limits::default());
        world
            .step(Op::Reserve {
                stream: 0,
                size: 3000,
            })
            .unwrap();
        for (i, &call) in sequence.iter().enumerate() {
            let checked = world.step(op(call)).and_then(|()| {
                // Allocate and free between calls, so each phase has work.
                world.step(Op::Reserve {
                    stream: 0,
                    size: 1000 + i as u64,
                })?;
                world.step(Op::Drop { alloc: 1 })
            });
            if let Err(v) = checked {
                panic!("sequence {sequence:?}, call {i}: {v}");
            }
        }
        world
            .finish()
            .unwrap_or_else(|v| panic!("sequence {sequence:?} at teardown: {v}"));
    }
}

#[test]
fn wrong_order_calls_are_no_ops_that_keep_the_first_record() {
    let mut w = World::new(Limits::default());
    let m = w.manager(0);
    assert!(m.capture_end().is_empty(), "end without a capture");
    m.capture_priming_end();
    assert_eq!(m.capture_state(), CaptureState::default());
    m.capture_begin();
    let _a = m.reserve(1000).unwrap();
    m.capture_begin();
    assert_eq!(
        m.capture_state().touched,
        1,
        "a second begin keeps the record"
    );
    m.capture_priming_end();
    m.capture_priming_end();
    assert!(!m.capture_state().priming);
    assert_eq!(m.effective_mode(), MemoryAllocationMode::Persistent);
    let graph = m.capture_end();
    assert_eq!(graph.len(), 1);
    assert_eq!(m.effective_mode(), MemoryAllocationMode::Auto);
    assert!(m.capture_end().is_empty(), "a second end returns nothing");
}

/// Fill the growable pool so its first pages become outdated.
fn outdated(w: &mut World) -> Vec<mem_pools::ManagedMemoryHandle> {
    let m = w.manager(0);
    let small: Vec<_> = (0..3).map(|_| m.reserve(1000).unwrap()).collect();
    let grow = m.reserve(9000).unwrap();
    for (i, h) in small.iter().enumerate() {
        m.write(h.binding(), &[i as u8 + 1; 16]).unwrap();
    }
    assert!(m.has_outdated(), "growth left outdated pages");
    small.into_iter().chain([grow]).collect()
}

#[test]
fn a_plan_made_inside_a_capture_is_empty_while_priming_and_while_recording() {
    let mut w = World::new(Limits::default());
    let _live = outdated(&mut w);
    let m = w.manager(0);
    m.capture_begin();
    assert!(m.plan_relocation(TargetRoom::MayAllocate).is_empty());
    m.capture_priming_end();
    assert!(m.plan_relocation(TargetRoom::MayAllocate).is_empty());
    drop(m.capture_end());
    assert!(!m.plan_relocation(TargetRoom::MayAllocate).is_empty());
}

#[test]
fn a_plan_committed_inside_the_window_moves_nothing_and_loses_nothing() {
    let mut w = World::new(Limits::default());
    let live = outdated(&mut w);
    let m = w.manager(0);
    let plan = m.plan_relocation(TargetRoom::MayAllocate);
    assert!(!plan.is_empty());
    let landed = m
        .copy_relocation(plan, &mut StorageCopyQueue)
        .expect("copies on host memory land");
    m.capture_begin();
    let outcome = m.commit_relocation(landed).unwrap();
    assert_eq!(outcome.moved_slices, 0, "nothing moves while recording");
    drop(m.capture_end());
    for (i, h) in live.iter().take(3).enumerate() {
        let mut out = [0u8; 16];
        m.read(h.binding(), &mut out).unwrap();
        assert_eq!(out, [i as u8 + 1; 16]);
    }
    let later = m.plan_relocation(TargetRoom::MayAllocate);
    let landed = m.copy_relocation(later, &mut StorageCopyQueue).unwrap();
    assert!(m.commit_relocation(landed).unwrap().moved_slices > 0);
}

#[test]
fn relocation_ops_inside_a_window_through_the_model_keep_every_invariant() {
    let mut w = World::new(Limits::default());
    let ops = [
        Op::Reserve {
            stream: 0,
            size: 1000,
        },
        Op::Reserve {
            stream: 0,
            size: 1000,
        },
        Op::Reserve {
            stream: 0,
            size: 9000,
        },
        Op::CaptureBegin { stream: 0 },
        Op::Relocate {
            stream: 0,
            may_allocate: true,
        },
        Op::CapturePrimingEnd { stream: 0 },
        Op::Relocate {
            stream: 0,
            may_allocate: true,
        },
        Op::Relocate {
            stream: 0,
            may_allocate: false,
        },
        Op::CaptureEnd { stream: 0 },
        Op::Relocate {
            stream: 0,
            may_allocate: true,
        },
    ];
    for op in ops {
        w.step(op).unwrap();
    }
    assert!(
        w.summary().moved > 0,
        "the relocation after the window moved"
    );
    w.finish().unwrap();
}
