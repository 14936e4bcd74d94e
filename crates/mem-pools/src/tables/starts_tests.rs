//! Tests of `starts.rs`: the last start at or before a unit, across words
//! and blocks, against a sorted map under random splits and merges.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::*;

#[test]
fn the_slice_holding_a_unit_is_the_last_start_at_or_before_it_across_words() {
    let mut s = SliceStarts::new(10_000, 7);
    assert_eq!(s.holding(0), Some(7));
    assert_eq!(s.holding(9_999), Some(7));
    s.insert(63, 1);
    s.insert(64, 2);
    s.insert(5_000, 3);
    assert_eq!(s.holding(62), Some(7));
    assert_eq!(s.holding(63), Some(1));
    assert_eq!(s.holding(4_999), Some(2));
    assert_eq!(s.holding(5_000), Some(3));
    assert_eq!(s.holding(9_999), Some(3));
    s.remove(5_000);
    s.remove(64);
    assert_eq!(s.holding(9_999), Some(1), "the summary skips emptied words");
    assert_eq!(s.holding(157 * 64), None, "past the last word");
}

#[test]
fn a_start_deep_in_a_large_range_costs_one_block_not_a_bitmap_up_to_it() {
    // A 64 GiB arena range at 256-byte alignment.
    let mut s = SliceStarts::new((64 << 30) / 256, 1);
    let deep = (48 << 30) / 256; // a slice ending at 48 GiB
    s.insert(deep, 2);
    s.insert(deep + 4097, 3);
    assert_eq!(s.blocks.len(), 3, "blocks of 0, of deep and of deep + 4097");
    assert_eq!(s.holding(deep - 1), Some(1), "back across empty blocks");
    assert_eq!(s.holding(deep + 4096), Some(2), "back to the block before");
    assert_eq!(s.holding(deep + 5000), Some(3));
    assert_eq!(
        s.holding((64 << 30) / 256 - 1),
        Some(3),
        "past the last block"
    );
    s.remove(deep + 4097);
    s.remove(deep);
    assert_eq!(
        s.holding(deep + 5000),
        Some(1),
        "emptied blocks are skipped"
    );
}

#[test]
fn holding_matches_a_sorted_map_under_random_splits_and_merges() {
    let units = 3 * BLOCK_UNITS + 100;
    let mut s = SliceStarts::new(units, 0);
    let mut reference = std::collections::BTreeMap::from([(0u64, 0u32)]);
    let mut rng = SmallRng::seed_from_u64(0x2545_F491_4F6C_DD1D);
    let mut next = |n: u64| rng.random_range(0..n);
    let rounds = if cfg!(miri) { 300 } else { 20_000 };
    for round in 0..rounds {
        let unit = 1 + next(units - 1);
        if next(3) == 0 {
            s.remove(unit);
            reference.remove(&unit);
        } else {
            s.insert(unit, round);
            reference.insert(unit, round);
        }
        let probe = next(units + 10);
        let expected = (probe < units)
            .then(|| reference.range(..=probe).next_back().map(|(_, &n)| n))
            .flatten();
        assert_eq!(
            s.holding(probe),
            expected,
            "unit {probe} after {round} steps"
        );
    }
}
