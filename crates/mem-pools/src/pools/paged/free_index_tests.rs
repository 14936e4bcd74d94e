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

/// `replace` leaves the index exactly as `remove` then `insert` would:
/// the same bitmaps, heads and list order, the same node links, whether
/// the sizes share a class or not and whether the slice is re-indexed or
/// another takes its place.
#[test]
fn replace_is_remove_then_insert() {
    let (mut a, mut b) = (FreeIndex::segregated(), FreeIndex::segregated());
    let (mut sa, mut sb) = (Arena::new("a"), Arena::new("b"));
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    // Up to 64 alignment units, times a power of two up to 2^15.
    let size = |n: u64| (256 * (1 + n % 64)) << (n >> 60);
    let ids: Vec<u32> = (0..48)
        .map(|i| {
            let s = size(next());
            let id = sa.insert(node(s)).unwrap();
            assert_eq!(sb.insert(node(s)).unwrap(), id);
            if i < 24 {
                a.insert(&mut sa, id);
                b.insert(&mut sb, id);
            }
            id
        })
        .collect();
    for _ in 0..4000 {
        let indexed: Vec<u32> = ids.iter().copied().filter(|&i| sa[i].indexed).collect();
        let old = indexed[(next() % indexed.len() as u64) as usize];
        let new = match next() % 2 {
            0 => old,
            _ => *ids.iter().find(|&&i| !sa[i].indexed).unwrap(),
        };
        let (old_size, new_size) = (sa[old].size, size(next()));
        a.remove(&mut sa, old);
        sa[new].size = new_size;
        a.insert(&mut sa, new);
        b.replace(&mut sb, (old, old_size), (new, new_size));
        sb[new].size = new_size;
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        for &i in &ids {
            let (x, y) = (&sa[i], &sb[i]);
            assert_eq!(
                (x.free_prev, x.free_next, x.indexed, x.size),
                (y.free_prev, y.free_next, y.indexed, y.size)
            );
        }
    }
}
