//! `Granules` alone: the dense table, the ordered one, and the switch.

use super::*;

fn c(id: u64) -> ChunkId {
    ChunkId(id)
}

#[test]
fn a_mapping_names_its_chunk_over_every_granule_it_covers_and_no_other() {
    let mut t = Granules::default();
    t.insert(2, 3, c(1));
    t.insert(5, 1, c(2));
    assert_eq!(
        (1..7).map(|g| t.get(g)).collect::<Vec<_>>(),
        [None, Some(c(1)), Some(c(1)), Some(c(1)), Some(c(2)), None]
    );
    assert_eq!(t.last_in(0, 5), Some(c(1)));
    assert_eq!(t.last_in(0, 6), Some(c(2)), "the one starting last");
    assert_eq!(t.last_in(6, 9), None);
    assert_eq!(t.starts(), [(2, c(1)), (5, c(2))]);
    t.remove(2, 3);
    assert_eq!((t.get(3), t.get(5)), (None, Some(c(2))));
    assert!(matches!(t, Granules::Dense(_)));
}

#[test]
fn a_mapping_past_the_dense_limit_turns_the_table_ordered_with_the_same_answers() {
    let mut t = Granules::default();
    t.insert(2, 3, c(1));
    t.insert(5, 1, c(2));
    let far = u64::MAX / 4;
    t.insert(far, 1 << 40, c(3));
    assert!(matches!(t, Granules::Ordered(_)));
    assert_eq!(
        (t.get(4), t.get(5), t.get(6)),
        (Some(c(1)), Some(c(2)), None)
    );
    assert_eq!(t.get(far + (1 << 40) - 1), Some(c(3)));
    assert_eq!(t.get(far + (1 << 40)), None);
    assert_eq!(t.last_in(0, 6), Some(c(2)));
    assert_eq!(
        t.last_in(far + 7, far + 9),
        Some(c(3)),
        "covered from before"
    );
    assert_eq!(t.starts(), [(2, c(1)), (5, c(2)), (far, c(3))]);
    t.remove(far, 1 << 40);
    assert_eq!(t.get(far), None);
}

#[test]
fn a_huge_chunk_at_a_tiny_granularity_costs_no_memory_for_its_length() {
    let mut t = Granules::default();
    t.insert(0, 1 << 50, c(9));
    assert!(matches!(&t, Granules::Ordered(m) if m.len() == 1));
    assert_eq!(t.get((1 << 50) - 1), Some(c(9)));
}

#[test]
fn the_dense_table_grows_by_doubling_and_never_past_its_limit() {
    let mut t = Granules::default();
    t.insert(0, 1, c(1));
    t.insert(1, 1, c(2));
    t.insert(2, 1, c(3));
    assert!(matches!(&t, Granules::Dense(v) if v.len() == 4));
    t.insert(DENSE_GRANULES - 1, 1, c(4));
    assert!(matches!(&t, Granules::Dense(v) if v.len() as u64 == DENSE_GRANULES));
}
