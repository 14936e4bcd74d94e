//! Tests of `mod.rs` and `idle.rs`: the idle FIFO, oldest
//! first by latest idle period, span claims that change nothing when
//! refused, and whole-span claims and releases that leave the list as
//! slot-by-slot steps would; unmapped counts against a slot-by-slot count.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::*;

/// A map of `n` mapped slots, none live.
fn mapped(n: u32) -> ChunkMap {
    let mut map = ChunkMap::new(1 << 16);
    for s in 0..n {
        map.set_extent(s, 1, Some(ChunkId(u64::from(s) + 1)));
    }
    map
}

#[test]
fn slots_reused_in_place_do_not_grow_the_idle_queue() {
    let mut map = mapped(8);
    let rounds = if cfg!(miri) { 200 } else { 10_000 };
    for _ in 0..rounds {
        (0..8).for_each(|s| map.claim_slot(s));
        (0..8).for_each(|s| map.release_slot(s));
        assert_eq!(map.idle_order().len(), 8, "each idle slot once");
    }
    assert_eq!(map.idle_count, 8);
    // Each idle slot comes out once, oldest first, then none.
    let order: Vec<u32> = std::iter::from_fn(|| map.take_idle(&NONE)).collect();
    assert_eq!(order, (0..8).collect::<Vec<_>>());
    assert_eq!(map.idle_count, 0);
}

#[test]
fn a_slot_reused_in_place_rejoins_the_idle_queue_as_its_newest() {
    let mut map = mapped(100);
    (0..100).for_each(|s| map.claim_slot(s));
    (0..100).for_each(|s| map.release_slot(s));
    // Slot 0 goes live and idle again: it is now the newest.
    for _ in 0..300 {
        map.claim_slot(0);
        map.release_slot(0);
    }
    assert_eq!(map.idle_order().len(), 100);
    let order: Vec<u32> = std::iter::from_fn(|| map.take_idle(&NONE)).collect();
    let mut expected: Vec<u32> = (1..100).collect();
    expected.push(0);
    assert_eq!(order, expected);
}

#[test]
fn a_span_claim_with_one_unmapped_slot_changes_no_count_and_no_idle_order() {
    let mut map = mapped(6);
    (0..6).rev().for_each(|s| {
        map.claim_slot(s);
        map.release_slot(s);
    });
    map.slot(9); // slots 6-9 exist, unmapped
    assert!(!map.claim_span(3..=7));
    assert!(map.live.iter().all(|&l| l == 0));
    assert_eq!(map.idle_order(), vec![5, 4, 3, 2, 1, 0]);
    assert!(map.claim_span(1..=3));
    assert_eq!(map.idle_order(), vec![5, 4, 0]);
    map.release_span(1..=3);
    assert_eq!(map.idle_order(), vec![5, 4, 0, 1, 2, 3]);
}

#[test]
fn taking_an_idle_chunk_skips_the_span_being_mapped() {
    let mut map = mapped(5);
    (0..5).for_each(|s| {
        map.claim_slot(s);
        map.release_slot(s);
    });
    assert_eq!(
        map.take_idle_extent(&(0..=1), false, usize::MAX),
        Some((2, 1))
    );
    assert_eq!(map.idle_order(), vec![0, 1, 3, 4]);
    assert_eq!(map.take_idle_extent(&(0..=4), false, usize::MAX), None);
    assert_eq!(map.idle_count, 4);
}

#[test]
fn a_chunk_to_shed_comes_from_the_edge_of_a_stripped_region_before_a_whole_hole() {
    let mut map = mapped(8);
    map.set_extent(5, 1, None); // stripped earlier
    for s in [1, 4, 2] {
        map.claim_slot(s);
        map.release_slot(s);
    }
    // Slot 1 is the oldest, but its neighbours are mapped; 4 borders 5.
    assert_eq!(map.take_idle_extent(&NONE, true, 64), Some((4, 1)));
    // None of the rest borders an unmapped slot: the oldest goes.
    assert_eq!(map.take_idle_extent(&NONE, true, 64), Some((1, 1)));
    // Trimming takes strictly the oldest.
    map.claim_slot(6);
    map.release_slot(6); // borders 5, newest
    assert_eq!(map.take_idle_extent(&NONE, false, 64), Some((2, 1)));
    assert_eq!(map.take_idle_extent(&NONE, false, 64), Some((6, 1)));
}

#[test]
fn a_chunk_of_several_slots_goes_only_once_every_slot_of_it_is_idle() {
    let mut map = ChunkMap::new(1 << 16);
    map.set_extent(0, 3, Some(ChunkId(1))); // slots 0-2: one chunk
    map.set_extent(3, 1, Some(ChunkId(2)));
    assert_eq!(map.mapped, 4);
    assert_eq!(map.extent(1), (0, 3));
    map.claim_span(0..=3);
    map.release_span(1..=3); // slot 0 stays live
    map.release_span(0..=0);
    map.claim_span(0..=0); // live again: idle 1, 2, 3
    assert_eq!(map.idle_order(), vec![1, 2, 3]);
    // Slots 1 and 2 are idle, but their chunk still has a live slot.
    assert_eq!(map.take_idle_extent(&NONE, false, usize::MAX), Some((3, 1)));
    map.release_span(0..=0);
    assert_eq!(map.take_idle_extent(&NONE, false, usize::MAX), Some((0, 3)));
    assert_eq!(map.idle_count, 0);
    map.set_extent(0, 3, None);
    assert_eq!(map.mapped, 1);
    assert_eq!(map.unmapped_in(0..=3), 3);
}

#[test]
fn unmapped_slots_of_any_span_match_a_slot_by_slot_count() {
    let mut rng = SmallRng::seed_from_u64(7);
    for round in 0..80 {
        let mut map = ChunkMap::new(1 << 21);
        // Every other map has long chunks: spans fully mapped over many
        // words (the one-AND check) and spans with a hole deep inside.
        let (n, chunk, span) = match round % 2 {
            0 => (rng.random_range(1..300u32), 40, 200),
            _ => (rng.random_range(600..2_000u32), 900, 1_500),
        };
        let mut s = 0;
        while s < n {
            let len = rng.random_range(1..chunk).min(n - s);
            if rng.random_bool(0.6) {
                map.set_extent(s, len, Some(ChunkId(u64::from(s))));
            }
            s += len;
        }
        let mapped = |t: u32| map.slots.get(t as usize).is_some_and(|x| x.chunk.is_some());
        for _ in 0..200 {
            let first = rng.random_range(0..n + 140);
            let last = first + rng.random_range(0..span);
            let want = (first..=last).filter(|&t| !mapped(t)).count() as u64;
            assert_eq!(
                map.unmapped_in(first..=last),
                want,
                "{first}..={last} of {n}"
            );
        }
        assert_eq!(map.unmapped_in(NONE), 0);
    }
}

#[test]
fn the_next_mapped_or_unmapped_slot_matches_a_slot_by_slot_search() {
    let mut rng = SmallRng::seed_from_u64(11);
    for round in 0..80 {
        let mut map = ChunkMap::new(1 << 21);
        // Every other map is long, with long runs: searches that pass
        // over blocks of eight words whole.
        let (n, run, span) = match round % 2 {
            0 => (rng.random_range(1..300u32), 90, 200),
            _ => (rng.random_range(600..3_000u32), 1_200, 2_000),
        };
        map.slot(n - 1);
        // Runs mapped where all were unmapped, unmapped where all were
        // mapped: bits set and cleared in runs that cross words.
        for _ in 0..rng.random_range(0..40) {
            let first = rng.random_range(0..n);
            let len = rng.random_range(1..=(n - first).min(run));
            match map.unmapped_in(first..=first + len - 1) {
                0 => map.set_extent(first, len, None),
                holes if holes == u64::from(len) => {
                    map.set_extent(first, len, Some(ChunkId(u64::from(first))));
                }
                _ => {}
            }
        }
        let mapped = |t: u32| map.slots.get(t as usize).is_some_and(|x| x.chunk.is_some());
        for _ in 0..200 {
            let from = rng.random_range(0..n + 140);
            let last = from + rng.random_range(0..span);
            for want_mapped in [false, true] {
                let want = (from..=last)
                    .find(|&t| mapped(t) == want_mapped)
                    .unwrap_or(last + 1);
                let got = map.next_slot(want_mapped, from, last);
                assert_eq!(got, want, "{want_mapped} in {from}..={last} of {n}");
            }
        }
    }
}
