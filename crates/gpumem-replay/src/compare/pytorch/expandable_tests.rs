//! The `expandable_segments` variant, one rule per test.

use gpumem::storage::units::{GIB, KIB, MIB};
use gpumem::storage::{DriverCall, DriverCosts};

use super::*;

fn model(policy: Policy, capacity: u64) -> CachingAllocator {
    CachingAllocator::new(policy, capacity, DriverCosts::A100)
}

fn expandable() -> Policy {
    Policy {
        expandable: true,
        ..Policy::default()
    }
}

#[test]
fn expandable_segments_grow_by_pages_and_charge_create_map_and_access() {
    let mut m = model(expandable(), GIB);
    let a = m.malloc(3 * MIB, 0).unwrap();
    assert_eq!(m.reserved_bytes(), 20 * MIB, "one 20 MiB large page");
    let b = m.malloc(30 * MIB, 0).unwrap();
    // 17 MiB free at the tail: 13 MiB more is one page.
    assert_eq!(m.reserved_bytes(), 40 * MIB);
    assert_eq!(b, a + 3 * MIB, "the segment grew in place");
    m.malloc(KIB, 0).unwrap();
    assert_eq!(m.reserved_bytes(), 42 * MIB, "a 2 MiB small page");
    let c = m.calls();
    assert_eq!((c.pages_mapped, c.cuda_mallocs), (3, 0));
    let t = m.driver_time();
    assert_eq!(t.calls(DriverCall::Create), 3);
    assert_eq!(t.calls(DriverCall::Map), 3);
    assert_eq!(t.calls(DriverCall::SetAccess), 3);
    assert_eq!(t.calls(DriverCall::AddressReserve), 2);
}

#[test]
fn expandable_release_unmaps_the_free_pages_at_a_segments_end() {
    let mut m = model(expandable(), GIB);
    let a = m.malloc(5 * MIB, 0).unwrap();
    let b = m.malloc(50 * MIB, 0).unwrap();
    assert_eq!(m.reserved_bytes(), 60 * MIB);
    m.free(b).unwrap();
    m.release_cached();
    // The first page still holds `a`; the two after it are unmapped.
    assert_eq!(m.reserved_bytes(), 20 * MIB);
    assert_eq!(m.calls().pages_unmapped, 2);
    m.free(a).unwrap();
    m.release_cached();
    assert_eq!(m.reserved_bytes(), 0);
    assert!(m.malloc(5 * MIB, 0).is_ok(), "the segment maps again");
}

#[test]
fn expandable_segments_reserve_less_than_segments_for_growing_batches() {
    // The "N+1 batch" pattern: each step frees its buffer and asks for a
    // slightly larger one; fixed segments cannot reuse the cached ones.
    let run = |policy| {
        let mut m = model(policy, GIB);
        for step in 0..20u64 {
            let a = m.malloc(24 * MIB + step * MIB, 0).unwrap();
            m.free(a).unwrap();
        }
        m.peak_reserved_bytes()
    };
    let (fixed, grown) = (run(Policy::default()), run(expandable()));
    assert!(grown < fixed, "expandable {grown} vs segments {fixed}");
    assert_eq!(grown, 60 * MIB);
}

#[test]
fn expandable_best_fit_leaves_the_growable_tail_for_last() {
    let mut m = model(expandable(), GIB);
    let x = m.malloc(12 * MIB, 0).unwrap();
    let _y = m.malloc(2 * MIB, 0).unwrap();
    m.free(x).unwrap();
    // Free: 12 MiB at x and the 6 MiB tail of the 20 MiB page. The tail
    // fits 4 MiB best, but it can grow, so the 12 MiB block serves.
    assert_eq!(m.malloc(4 * MIB, 0).unwrap(), x);
    assert_eq!(m.reserved_bytes(), 20 * MIB);
}

#[test]
fn expandable_release_unmaps_free_pages_anywhere_and_maps_the_lowest_hole_again() {
    let mut m = model(expandable(), GIB);
    let x = m.malloc(30 * MIB, 0).unwrap();
    let _y = m.malloc(5 * MIB, 0).unwrap();
    assert_eq!(m.reserved_bytes(), 40 * MIB);
    m.free(x).unwrap();
    m.release_cached();
    // The first page was wholly free; the second still holds y.
    assert_eq!(m.reserved_bytes(), 20 * MIB);
    assert_eq!(m.calls().pages_unmapped, 1);
    // 15 MiB fits no mapped free block: the hole at the start is mapped
    // again and joins the free 10 MiB after it.
    assert_eq!(m.malloc(15 * MIB, 0).unwrap(), x);
    assert_eq!(m.reserved_bytes(), 40 * MIB);
}
