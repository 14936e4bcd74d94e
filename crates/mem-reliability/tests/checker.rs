//! The checker is only worth its passes if it fails on a broken world:
//! each test plants one kind of defect behind the model's back and expects
//! the invariant pass (or the op's own judgement) to name it.

use mem_reliability::{Limits, Op, Violation, World, layout, props};
use mem_storage::{ComputeStorage, DeviceResource, StreamId};

fn world_with_one_allocation() -> World {
    let mut world = World::new(Limits::default());
    world
        .step(Op::Reserve {
            stream: 0,
            size: 4096,
        })
        .expect("a 4 KiB reserve on an empty world is fine");
    world
}

#[test]
fn bytes_overwritten_behind_the_models_back_are_reported_as_lost_contents() {
    let mut world = world_with_one_allocation();
    let binding = world.model().entries[0].binding;
    world.manager(0).write(binding, &[0xee; 4]).unwrap();
    match world.check(1) {
        Err(Violation::ContentsLost {
            offset: 0, found, ..
        }) => assert_eq!(found, 0xee),
        other => panic!("expected lost contents at byte 0, got {other:?}"),
    }
}

#[test]
fn an_allocation_the_model_does_not_know_is_a_count_mismatch() {
    let mut world = world_with_one_allocation();
    let _hidden = world.manager(1).reserve(100).unwrap();
    match world.check(1) {
        Err(Violation::Mismatch {
            what,
            expected: 0,
            found: 1,
            ..
        }) => assert_eq!(what, "stream 1 number_allocs"),
        other => panic!("expected a live-slice mismatch on stream 1, got {other:?}"),
    }
}

#[test]
fn device_memory_taken_around_the_stack_breaks_the_conservation_law() {
    let mut world = world_with_one_allocation();
    let ptr = world
        .device()
        .faults()
        .allocate(512, StreamId::DEFAULT)
        .unwrap();
    match world.check(1) {
        Err(Violation::Mismatch { what, .. }) => {
            assert!(what.starts_with("host outstanding"), "{what}")
        }
        other => panic!("expected a host-outstanding mismatch, got {other:?}"),
    }
    world
        .device()
        .faults()
        .deallocate(ptr, 512, StreamId::DEFAULT)
        .unwrap();
    world
        .check(2)
        .expect("consistent again once it is given back");
}

#[test]
fn a_page_kept_by_a_storage_nobody_drops_is_found_at_teardown() {
    let world = world_with_one_allocation();
    let mut stray = world.device().storage(9);
    stray.alloc(8192).unwrap();
    std::mem::forget(stray);
    match world.finish() {
        Err(Violation::Mismatch { what, .. }) => {
            assert!(what.starts_with("host outstanding"), "{what}")
        }
        other => panic!("expected the stray page to be found, got {other:?}"),
    }
}

#[test]
fn a_layout_changed_behind_the_models_back_makes_a_refusal_unexpected() {
    let mut world = World::new(Limits::default());
    world
        .manager(0)
        .install_pools(layout(1).0, &props())
        .unwrap();
    // Layout 0 routes 200 000 bytes; layout 1 refuses them.
    match world.step(Op::Reserve {
        stream: 0,
        size: 200_000,
    }) {
        Err(Violation::UnexpectedError { error, .. }) => {
            assert!(error.contains("no pool accepts 200000 bytes"), "{error}")
        }
        other => panic!("expected the refusal to be flagged, got {other:?}"),
    }
}

#[test]
fn a_clean_world_passes_every_check_and_tears_down_to_nothing() {
    let mut world = world_with_one_allocation();
    world.check(1).unwrap();
    let summary = world.finish().unwrap();
    assert_eq!(summary.ops, 1);
    assert!(summary.checks >= 3, "{summary:?}");
}
