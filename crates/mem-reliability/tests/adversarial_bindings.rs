//! Bindings used where they do not belong: ranges past the end in
//! `get_resource`, bindings of another manager, and bindings that outlived
//! an `install_pools`. Each is a typed refusal, never another allocation's
//! memory, and changes nothing.

use mem_pools::{IoError, MemoryAllocationMode};
use mem_reliability::{Limits, Op, World, layout, props};

fn world() -> World {
    World::new(Limits::default())
}

#[test]
fn get_resource_past_the_end_is_out_of_bounds_with_the_numbers() {
    let mut w = world();
    let m = w.manager(0);
    let h = m.reserve(1000).unwrap();
    let b = h.binding();
    let cases = [
        (Some(0), Some(1001)),
        (Some(1001), None),
        (Some(600), Some(500)),
        (None, Some(u64::MAX)),
        (Some(u64::MAX), None),
        (Some(u64::MAX - 255), Some(u64::MAX)),
    ];
    for (start, end) in cases {
        let err = m.get_resource(b, start, end).unwrap_err();
        assert_eq!(
            err,
            IoError::OutOfBounds {
                start: start.unwrap_or(0),
                end: end.unwrap_or(1000),
                size: 1000
            },
            "{start:?}..{end:?}"
        );
    }
    // The refusals pinned nothing: the page is still free to move.
    assert_eq!(m.relocation_state().shape.outdated_pinned, 0);
    let whole = m.get_resource(b, None, None).unwrap();
    assert_eq!(whole.size, 1000);
    let tail = m.get_resource(b, Some(1000), None).unwrap();
    assert_eq!((tail.size, tail.ptr.0), (0, whole.ptr.0 + 1000));
}

#[test]
fn out_of_range_raw_requests_through_the_model_keep_every_invariant() {
    let mut w = world();
    w.step(Op::Reserve {
        stream: 0,
        size: 4096,
    })
    .unwrap();
    for (start, end) in [
        (Some(4097), None),
        (None, Some(u64::MAX)),
        (Some(u64::MAX - 255), None),
        (Some(10), Some(5)),
        (Some(4096), Some(4096)),
    ] {
        w.step(Op::Raw {
            alloc: 0,
            start,
            end,
        })
        .unwrap();
    }
    assert_eq!(w.summary().refusals, 4);
    w.finish().unwrap();
}

#[test]
fn a_binding_from_another_manager_is_refused_by_every_entry_point() {
    let mut w = world();
    let theirs = w.manager(1).reserve(512).unwrap();
    w.manager(1).write(theirs.binding(), &[1, 2, 3]).unwrap();
    let ours = w.manager(0).reserve(512).unwrap();
    let (mine, other) = (w.manager(0).id(), w.manager(1).id());
    let foreign = IoError::ForeignBinding {
        expected: mine,
        found: other,
    };
    let b = theirs.binding();
    let m = w.manager(0);
    assert_eq!(m.get_storage(b).unwrap_err(), foreign);
    assert_eq!(m.get_resource(b, None, None).unwrap_err(), foreign);
    assert_eq!(m.write(b, &[9]).unwrap_err(), foreign);
    assert_eq!(m.read(b, &mut [0]).unwrap_err(), foreign);
    assert_eq!(m.get_cursor(b).unwrap_err(), foreign);
    assert_eq!(m.release_raw(b).unwrap_err(), foreign);
    assert_eq!(
        m.bind(ours.clone(), theirs.clone(), 1).unwrap_err(),
        foreign
    );
    assert_eq!(
        m.bind(theirs.clone(), ours.clone(), 1).unwrap_err(),
        foreign
    );
    assert_eq!(m.memory_usage().number_allocs, 1);
    let mut out = [0u8; 3];
    w.manager(1).read(b, &mut out).unwrap();
    assert_eq!(out, [1, 2, 3], "the owner's bytes are untouched");
}

#[test]
fn a_binding_that_outlived_install_pools_is_stale_not_the_new_allocation() {
    let mut w = world();
    let m = w.manager(0);
    let old = m.reserve(5000).unwrap();
    let stale = old.binding();
    drop(old);
    m.install_pools(layout(1).0, &props()).unwrap();
    let new = m.reserve(5000).unwrap();
    m.write(new.binding(), &[0xab; 8]).unwrap();
    assert!(matches!(
        m.get_storage(stale),
        Err(IoError::StaleBinding { .. })
    ));
    assert!(matches!(
        m.write(stale, &[0; 8]),
        Err(IoError::StaleBinding { .. })
    ));
    let mut out = [0u8; 8];
    m.read(new.binding(), &mut out).unwrap();
    assert_eq!(out, [0xab; 8]);
}

#[test]
fn a_persistent_binding_survives_install_pools_with_its_bytes() {
    let mut w = world();
    let m = w.manager(0);
    m.mode(MemoryAllocationMode::Persistent);
    let weights = m.reserve(3000).unwrap();
    m.mode(MemoryAllocationMode::Auto);
    m.write(weights.binding(), b"weights").unwrap();
    m.install_pools(layout(2).0, &props()).unwrap();
    let mut out = [0u8; 7];
    m.read(weights.binding(), &mut out).unwrap();
    assert_eq!(&out, b"weights");
}

#[test]
fn install_pools_with_a_live_dynamic_binding_is_refused_and_keeps_the_layout() {
    let mut w = world();
    let m = w.manager(0);
    let live = m.reserve(5000).unwrap();
    let before = m.configuration().clone();
    let err = m.install_pools(layout(2).0, &props()).unwrap_err();
    assert_eq!(
        err,
        mem_pools::InstallMemoryPoolsError::PoolsInUse {
            live_slices: 1,
            live_bytes: 5000
        }
    );
    assert_eq!(m.configuration(), &before);
    m.write(live.binding(), &[1]).unwrap();
}
