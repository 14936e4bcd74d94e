//! Unit tests of `free_index`.

use super::*;

fn node(size: u64) -> SliceNode {
    SliceNode::free(0, 0, size)
}

fn filled(index: &mut FreeIndex, sizes: &[u64]) -> (Arena<SliceNode>, Vec<u32>) {
    let mut arena = Arena::new("test");
    let ids = sizes
        .iter()
        .map(|&s| {
            let id = arena.insert(node(s)).unwrap();
            index.insert(&mut arena, id);
            id
        })
        .collect();
    (arena, ids)
}

#[test]
fn segregated_find_returns_a_slice_at_least_as_large_as_asked() {
    let mut index = FreeIndex::segregated();
    let sizes = [256, 1000, 4096, 5000, 70_000, 1 << 30];
    let (arena, _) = filled(&mut index, &sizes);
    for want in [
        1,
        255,
        256,
        257,
        999,
        1000,
        4097,
        5000,
        65_536,
        70_000,
        1 << 29,
        1 << 30,
    ] {
        let got = index.find(&arena, want).expect("a fit exists");
        assert!(
            arena[got].size >= want,
            "asked {want}, got {}",
            arena[got].size
        );
    }
    assert_eq!(index.find(&arena, (1 << 30) + 1), None);
    assert_eq!(index.find(&arena, u64::MAX), None);
}

#[test]
fn an_exact_size_in_the_requests_own_class_is_found_before_rounding_up() {
    let mut index = FreeIndex::segregated();
    // 5000 is not on a class boundary; rounding up alone would skip it.
    let (arena, ids) = filled(&mut index, &[5000, 1 << 20]);
    assert_eq!(index.find(&arena, 5000), Some(ids[0]));
}

#[test]
fn removed_slices_are_no_longer_found_and_bitmaps_clear() {
    let mut index = FreeIndex::segregated();
    let (mut arena, ids) = filled(&mut index, &[4096, 4096]);
    index.remove(&mut arena, ids[0]);
    assert_eq!(index.find(&arena, 4096), Some(ids[1]));
    index.remove(&mut arena, ids[1]);
    assert_eq!(index.find(&arena, 1), None);
    assert_eq!(index.largest(&arena), 0);
    index.remove(&mut arena, ids[1]); // not indexed: no-op
}

#[test]
fn exact_index_finds_only_the_same_size() {
    let mut index = FreeIndex::exact();
    let (mut arena, ids) = filled(&mut index, &[512, 1024]);
    assert_eq!(index.find(&arena, 512), Some(ids[0]));
    assert_eq!(index.find(&arena, 768), None);
    assert_eq!(index.largest(&arena), 1024);
    index.remove(&mut arena, ids[1]);
    assert_eq!(index.find(&arena, 1024), None);
    assert_eq!(index.largest(&arena), 512);
}

#[test]
fn largest_reports_the_biggest_free_slice() {
    let mut index = FreeIndex::segregated();
    let (arena, _) = filled(&mut index, &[300, 9000, 8800, 12]);
    assert_eq!(index.largest(&arena), 9000);
}
