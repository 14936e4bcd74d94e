//! Defects found in other crates, each pinned by a test (described in
//! docs/reliability.md, Findings). An open one is `#[ignore]`d with the reason so the
//! suite stays green (`cargo test -p mem-reliability --test known_bugs --
//! --ignored` shows it failing); a fixed one runs as a regression test.

use mem_pools::{IoError, MemoryAllocationMode, StorageCopyQueue, TargetRoom};
use mem_reliability::{Limits, Op, World, props};

#[test]
fn a_persistent_reservation_never_allocates_a_page_above_the_device_max_page_size() {
    let mut w = World::new(Limits::default());
    let max_page = props().max_page_size;
    let m = w.manager(0);
    m.mode(MemoryAllocationMode::Persistent);
    let result = m.reserve(2 * max_page);
    let page = w.manager(0).memory_usage().bytes_reserved;
    assert!(
        page <= max_page,
        "a {} byte page was allocated on a device whose largest page is {max_page} bytes ({result:?})",
        page
    );
    assert!(
        matches!(result, Err(IoError::BufferTooBig { .. })),
        "{result:?}"
    );
}

#[test]
fn copying_a_relocation_inside_a_capture_window_makes_no_device_call() {
    let mut w = World::new(Limits::default());
    let m = w.manager(0);
    let _small: Vec<_> = (0..3).map(|_| m.reserve(1000).unwrap()).collect();
    let _grow = m.reserve(9000).unwrap();
    let plan = m.plan_relocation(TargetRoom::MayAllocate);
    assert!(!plan.is_empty());
    m.capture_begin();
    let before = w.device().calls();
    let copied = w.manager(0).copy_relocation(plan, &mut StorageCopyQueue);
    let calls = w.device().calls() - before;
    assert!(
        copied.is_err() || calls == 0,
        "{calls} device calls (synchronize, copy) inside the capture window"
    );
    drop(w.manager(0).capture_end());
}

#[test]
fn a_refused_reservation_leaves_reserved_bytes_as_they_were() {
    let mut w = World::strict(Limits::default());
    for op in [
        Op::Reserve {
            stream: 0,
            size: 1000,
        },
        Op::Reserve {
            stream: 0,
            size: 3000,
        },
        Op::Drop { alloc: 0 },
        Op::Drop { alloc: 0 },
    ] {
        w.step(op).unwrap();
    }
    // Growth to an 8 KiB page: every device call from here fails.
    w.device().arm_from(w.device().calls() + 1);
    let refused = w.apply(Op::Reserve {
        stream: 0,
        size: 5000,
    });
    w.device().disarm();
    if let Err(v) = refused {
        panic!("{v}");
    }
}

#[test]
fn a_huge_persistent_reservation_on_a_lazy_manager_is_refused_not_a_panic() {
    let mut w = World::strict(Limits::default());
    let stream = mem_reliability::LAZY_STREAM as u8;
    for op in [
        Op::Mode {
            stream,
            persistent: true,
        },
        Op::Reserve { stream, size: 4096 },
        Op::Reserve {
            stream,
            size: u64::MAX - 256,
        },
    ] {
        if let Err(v) = w.step(op) {
            panic!("{v}");
        }
    }
}
