//! The `expandable_segments` variant, one rule per test, each as
//! `c10/cuda/CUDACachingAllocator.cpp` has it (the function named in the
//! test). PyTorch's own tests are in `expandable_torch_tests.rs`.

use gpumem::storage::DriverCall;
use gpumem::storage::units::{GIB, KIB, MIB};

use super::test_models::{expandable, model};
use super::*;

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

fn capped(max_split_size: u64) -> Policy {
    Policy {
        max_split_size,
        ..expandable()
    }
}

#[test]
fn an_oversize_free_block_before_unmapped_space_serves_a_small_request_without_mapping() {
    // `get_free_block` refuses the 60 MiB oversize block to a 4 MiB
    // request, but `find_expandable_block` then finds that same free
    // block before the unmapped tail, big enough as it is: it is split
    // and nothing is mapped (`try_allocate_expandable_block` maps only
    // when the run is short).
    let mut m = model(capped(40 * MIB), GIB);
    let big = m.malloc(60 * MIB, 0).unwrap();
    m.free(big).unwrap();
    assert_eq!(m.malloc(4 * MIB, 0).unwrap(), big);
    assert_eq!(m.reserved_bytes(), 60 * MIB);
    let (c, t) = (m.calls(), m.driver_time());
    assert_eq!((c.pages_mapped, c.segment_maps), (3, 1));
    assert_eq!(
        t.calls(DriverCall::SetAccess),
        1,
        "no access call for no page"
    );
}

#[test]
fn a_request_over_two_unmapped_holes_maps_each_with_its_own_access_call() {
    // `map_block` runs once per unmapped block of the run, each with one
    // cuMemSetAccess and one segment_map event.
    let mut m = model(expandable(), GIB);
    let x = m.malloc(30 * MIB, 0).unwrap();
    let y = m.malloc(5 * MIB, 0).unwrap();
    let z = m.malloc(25 * MIB, 0).unwrap();
    let _w = m.malloc(3 * MIB / 2, 0).unwrap();
    assert_eq!(m.reserved_bytes(), 80 * MIB);
    m.free(x).unwrap();
    m.free(z).unwrap();
    m.release_cached();
    // Pages 0 and 2 were wholly free; y keeps page 1, w page 3.
    assert_eq!(m.reserved_bytes(), 40 * MIB);
    m.free(y).unwrap();
    let (maps, access) = (
        m.calls().segment_maps,
        m.driver_time().calls(DriverCall::SetAccess),
    );
    // Hole, free page 1, hole: 60 MiB from the segment's start.
    assert_eq!(m.malloc(60 * MIB, 0).unwrap(), x);
    assert_eq!(m.reserved_bytes(), 80 * MIB);
    assert_eq!(m.calls().segment_maps - maps, 2);
    assert_eq!(m.driver_time().calls(DriverCall::SetAccess) - access, 2);
}

#[test]
fn a_segment_left_with_no_page_mapped_gives_its_range_back_and_the_next_request_reserves_another() {
    // `release_blocks`: an unmapped block with no neighbours is the whole
    // segment, and `release_expandable_segment` frees its address range.
    let mut m = model(expandable(), GIB);
    let a = m.malloc(5 * MIB, 0).unwrap();
    m.free(a).unwrap();
    m.release_cached();
    assert_eq!(m.reserved_bytes(), 0);
    assert!(m.mapped_ranges().is_empty());
    let t = m.driver_time();
    assert_eq!(t.calls(DriverCall::AddressFree), 1);
    m.malloc(5 * MIB, 0).unwrap();
    assert_eq!(m.driver_time().calls(DriverCall::AddressReserve), 2);
    // A segment that keeps a page keeps its range.
    m.release_cached();
    assert_eq!(m.driver_time().calls(DriverCall::AddressFree), 1);
}

#[test]
fn releasing_expandable_pages_waits_for_each_unmapped_block_stream_not_the_device() {
    // `unmapHandles` synchronizes the segment's stream before it unmaps;
    // `release_cached_blocks` itself makes no device-wide wait.
    let mut m = model(expandable(), GIB);
    let a = m.malloc(5 * MIB, 0).unwrap();
    let b = m.malloc(5 * MIB, 1).unwrap();
    m.free(a).unwrap();
    m.free(b).unwrap();
    m.release_cached();
    let t = m.driver_time();
    assert_eq!(t.calls(DriverCall::StreamSynchronize), 2);
    assert_eq!(t.calls(DriverCall::DeviceSynchronize), 0);
    assert_eq!(m.calls().segment_unmaps, 2);
    // Nothing free to unmap: no wait at all.
    m.release_cached();
    assert_eq!(m.driver_time().calls(DriverCall::StreamSynchronize), 2);
}

#[test]
fn each_stream_and_pool_grows_its_own_segment_and_never_maps_into_anothers() {
    let mut m = model(expandable(), GIB);
    let a = m.malloc(4 * MIB, 0).unwrap();
    m.malloc(4 * MIB, 1).unwrap();
    m.malloc(KIB, 1).unwrap();
    assert_eq!(m.driver_time().calls(DriverCall::AddressReserve), 3);
    m.free(a).unwrap();
    // Stream 1 has 16 MiB free at its tail: 18 MiB maps a page of its
    // own rather than take stream 0's free 20 MiB.
    m.malloc(18 * MIB, 1).unwrap();
    assert_eq!(m.reserved_bytes(), 62 * MIB);
    let ranges = m.mapped_ranges();
    let on = |stream, pool| {
        ranges
            .iter()
            .filter(|r| r.stream == stream && r.pool == pool)
            .map(|r| r.bytes)
            .sum::<u64>()
    };
    assert_eq!(on(0, Pool::Large), 20 * MIB);
    assert_eq!(on(1, Pool::Large), 40 * MIB);
    assert_eq!(on(1, Pool::Small), 2 * MIB);
}

#[test]
fn a_segment_spans_an_eighth_more_than_the_device_and_a_run_past_its_end_reserves_another() {
    // `ExpandableSegment` reserves 1⅛ × the device's memory; when no
    // unmapped run of the stream's segments holds a request,
    // `find_expandable_block` reserves a new segment.
    let mut m = model(expandable(), 160 * MIB);
    let a = m.malloc(100 * MIB, 0).unwrap();
    let _b = m.malloc(40 * MIB, 0).unwrap();
    m.free(a).unwrap();
    m.release_cached();
    assert_eq!(m.reserved_bytes(), 40 * MIB);
    // 180 MiB of address space: a 100 MiB hole before b, 40 MiB after it.
    let c = m.malloc(120 * MIB, 0).unwrap();
    assert!(c >= a + 180 * MIB, "in a second segment");
    assert_eq!(m.reserved_bytes(), 160 * MIB);
    assert_eq!(m.driver_time().calls(DriverCall::AddressReserve), 2);
    let ranges = m.mapped_ranges();
    assert_eq!(ranges.len(), 2);
    assert_eq!((ranges[0].offset, ranges[0].bytes), (100 * MIB, 40 * MIB));
    assert_eq!((ranges[1].offset, ranges[1].bytes), (0, 120 * MIB));
}
