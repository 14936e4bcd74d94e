//! PyTorch's own expandable-segment tests, as the model can run them:
//! `test/test_cuda.py` (which `test/test_cuda_expandable_segments.py`
//! reruns with `expandable_segments:True`), each sequence driven through
//! the model with the numbers PyTorch's allocator gives.

use gpumem::storage::units::{GIB, MIB};

use super::test_models::{expandable, model};
use super::*;

fn capped(max_split_size: u64) -> Policy {
    Policy {
        max_split_size,
        ..expandable()
    }
}

#[test]
fn test_max_split_expandable_three_40_mib_blocks_fill_120_mib_a_fourth_fails_and_120_mib_reuses_them()
 {
    // `test_max_split_expandable`, all expandable: a 120 MiB limit and
    // `max_split_size_mb:40`.
    let mut m = model(capped(40 * MIB), 120 * MIB);
    let blocks: Vec<u64> = (0..3).map(|_| m.malloc(40 * MIB, 0).unwrap()).collect();
    assert_eq!(
        blocks[1],
        blocks[0] + 40 * MIB,
        "one segment, grown in place"
    );
    assert_eq!(m.reserved_bytes(), 120 * MIB);
    assert!(
        m.malloc(40 * MIB, 0).is_err(),
        "a fourth 40 MiB is out of memory"
    );
    assert_eq!(m.calls().retries, 1);
    assert_eq!(m.calls().pages_unmapped, 0, "no page was free to unmap");
    for addr in blocks.iter().copied() {
        m.free(addr).unwrap();
    }
    // Oversize rules hold for expandable blocks too: 120 MiB may take the
    // merged 120 MiB block (within 20 MiB of it).
    assert_eq!(m.malloc(120 * MIB, 0).unwrap(), blocks[0]);
    assert_eq!(m.reserved_bytes(), 120 * MIB);
    assert_eq!(m.calls().pages_mapped, 6);
}

#[test]
fn test_garbage_collect_expandable_freed_neighbours_merge_so_80_mib_maps_no_page() {
    // `test_garbage_collect_expandable`, all expandable: 40 + 40 MiB
    // freed, then 80 MiB. The freed blocks are split parts of the segment,
    // so PyTorch's garbage collection would not free them either; the
    // request reuses them.
    let mut m = model(expandable(), 120 * MIB);
    let a = m.malloc(40 * MIB, 0).unwrap();
    let b = m.malloc(40 * MIB, 0).unwrap();
    m.free(a).unwrap();
    m.free(b).unwrap();
    assert_eq!(m.malloc(80 * MIB, 0).unwrap(), a);
    assert_eq!(m.reserved_bytes(), 80 * MIB);
    assert_eq!(m.calls().pages_mapped, 4);
}

#[test]
fn test_memory_snapshot_small_tensors_fill_2_mib_pages_and_empty_cache_unmaps_them_all() {
    // `test_memory_snapshot`'s sequence (float32 tensors): after the last
    // free, `empty_cache()` leaves an unmap as the last trace event.
    let f32s = |n: u64| 4 * n;
    let mut m = model(expandable(), GIB);
    let first = m.malloc(f32s(2 * 311 * 411), 0).unwrap();
    m.free(first).unwrap();
    let unused = m.malloc(f32s(310 * 410), 0).unwrap();
    let x = m.malloc(f32s(311 * 411), 0).unwrap();
    assert_eq!(m.reserved_bytes(), 2 * MIB, "one small page");
    // "a bunch of tensors that all will tile into the same segment": 1000
    // × 512 B, one after another in the same page.
    let mut tensors: Vec<u64> = (0..1000).map(|_| m.malloc(f32s(128), 0).unwrap()).collect();
    assert!(tensors.windows(2).all(|w| w[1] == w[0] + 512));
    assert_eq!(m.reserved_bytes(), 2 * MIB);
    let mut i = 7;
    while !tensors.is_empty() {
        i = (i * 31 + 11) % tensors.len().max(1);
        m.free(tensors.swap_remove(i % tensors.len())).unwrap();
    }
    let last = m.malloc(f32s(128 * 5), 0).unwrap();
    m.free(last).unwrap();
    m.free(unused).unwrap();
    m.free(x).unwrap();
    let before = m.calls().segment_unmaps;
    m.release_cached();
    assert_eq!(m.reserved_bytes(), 0);
    assert_eq!(
        m.calls().segment_unmaps - before,
        1,
        "one free run, one unmap"
    );
    assert_eq!((m.calls().pages_mapped, m.calls().pages_unmapped), (1, 1));
}

#[test]
fn test_out_of_memory_retry_half_the_device_twice_fails_then_fits_once_the_first_is_freed() {
    // `test_out_of_memory_retry` (run with expandable segments by
    // test_cuda_expandable_segments.py): a bit over half the device, twice.
    let mut m = model(expandable(), GIB);
    let half = GIB / 2 + 1;
    let a = m.malloc(half, 0).unwrap();
    assert_eq!(m.reserved_bytes(), 520 * MIB, "26 pages of 20 MiB");
    assert!(m.malloc(half, 0).is_err());
    assert_eq!(m.calls().retries, 1);
    m.free(a).unwrap();
    assert_eq!(m.malloc(half, 0).unwrap(), a, "the freed pages serve it");
    assert_eq!(m.reserved_bytes(), 520 * MIB);
    assert_eq!(m.calls().retries, 1);
}
