//! Tests of `claim.rs`: whole-span claims and releases (runs
//! unlinked and queued at once, live marks, idle bits and stamps a word
//! at a time) against slot-by-slot steps, on short spans and on spans of
//! hundreds of slots that cross bit words.

use std::collections::VecDeque;
use std::ops::RangeInclusive;

use mem_storage::ChunkId;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use crate::tables::chunk_map::bits;
use crate::tables::chunk_map::{ChunkMap, END, NONE};

/// A map of `n` mapped slots, none live.
fn mapped(n: u32) -> ChunkMap {
    let mut map = ChunkMap::new(1 << 16);
    for s in 0..n {
        map.set_extent(s, 1, Some(ChunkId(u64::from(s) + 1)));
    }
    map
}

/// Slot-by-slot steps, the reference a span's claim and release (which
/// unlink and queue whole runs at once) must match: a count and a stamp
/// per slot.
struct Model {
    live: Vec<u32>,
    mapped: Vec<bool>,
    idle: VecDeque<u32>,
    stamp: Vec<u64>,
}

impl Model {
    fn claim(&mut self, span: RangeInclusive<u32>) {
        for s in span {
            self.live[s as usize] += 1;
            self.idle.retain(|&t| t != s);
        }
    }

    fn release(&mut self, span: RangeInclusive<u32>, stamp: u64) {
        for s in span {
            self.live[s as usize] -= 1;
            if self.live[s as usize] == 0 && self.mapped[s as usize] {
                self.idle.push_back(s);
                self.stamp[s as usize] = stamp;
            }
        }
    }
}

/// The idle slots walked from the newest by `older`, oldest first: the
/// backward links must say what the forward ones say.
fn idle_order_backwards(map: &ChunkMap) -> Vec<u32> {
    let mut order = Vec::new();
    let mut s = map.newest;
    while s != END {
        order.push(s);
        s = map.older_through(s);
    }
    order.reverse();
    order
}

/// Replays `ops` (claim, claim, release, trim: at slot `at`, `len`
/// slots) on a map of `slots` mapped slots and on the model, comparing
/// the idle order both ways, the counts and the idle bits after each,
/// and the stamps (the submit cursor moves each op) with what the
/// stamp runs say: every idle slot's, and whether runs of idle slots and
/// the whole list are done at a completed cursor.
/// Overlapping spans (a release leaves some slots live between idle
/// ones), claims across runs queued by different releases, and the
/// oldest trimmed and unmapped (a claim there counts slot by slot, as a
/// lazy page's does; a release leaves it out of the list).
fn check_against_model(ops: Vec<(u8, u32, u32)>, slots: u32) -> Result<(), TestCaseError> {
    let mut map = mapped(slots);
    let mut model = Model {
        live: vec![0; slots as usize],
        mapped: vec![true; slots as usize],
        idle: VecDeque::new(),
        stamp: vec![0; slots as usize],
    };
    let mut live_spans: Vec<RangeInclusive<u32>> = Vec::new();
    let mut released = 0..=0;
    for (op, (kind, at, len)) in (1..).zip(ops) {
        map.submitted = op;
        match kind {
            0 | 1 | 4 | 5 => {
                let (start, end) = (*released.start(), *released.end());
                let span = match kind {
                    // The span released last, claimed again in place.
                    4 => released.clone(),
                    // A part of it: from inside it, to inside it or past.
                    5 => start + at % (end - start + 1)..=(end + len / 8).min(slots - 1),
                    _ => at..=(at + len - 1).min(slots - 1),
                };
                if span.clone().all(|s| model.mapped[s as usize]) {
                    map.claim_mapped_span(span.clone());
                } else {
                    span.clone().for_each(|s| map.claim_slot(s));
                }
                model.claim(span.clone());
                live_spans.push(span);
            }
            2 if !live_spans.is_empty() => {
                let span = live_spans.swap_remove(at as usize % live_spans.len());
                released = span.clone();
                map.release_span(span.clone());
                model.release(span, op);
            }
            _ => {
                let oldest = model.idle.pop_front();
                prop_assert_eq!(map.take_idle(&NONE), oldest);
                if let Some(s) = oldest {
                    map.set_extent(s, 1, None);
                    model.mapped[s as usize] = false;
                }
            }
        }
        let expected: Vec<u32> = model.idle.iter().copied().collect();
        prop_assert_eq!(map.idle_order(), expected.clone());
        prop_assert_eq!(idle_order_backwards(&map), expected);
        prop_assert_eq!(map.idle_count, model.idle.len() as u64);
        check_marks_and_stamps(&mut map, &model, op)?;
    }
    Ok(())
}

/// The live marks and stamps of `map` against the model's counts and
/// stamps, after op `op`.
fn check_marks_and_stamps(map: &mut ChunkMap, model: &Model, op: u64) -> Result<(), TestCaseError> {
    // The columns read raw from a copy with every uniform word settled.
    let mut raw = map.clone();
    raw.settle_all();
    for s in 0..map.slots.len() as u32 {
        let (i, idle) = (s as usize, map.is_idle(s));
        prop_assert_eq!(idle, model.idle.contains(&s));
        let count = model.live.get(i).copied().unwrap_or(0);
        // A count or a covered bit per live slice; the count bits in step.
        prop_assert_eq!(map.live_count(s), count);
        prop_assert_eq!(map.is_live(s), count > 0);
        prop_assert_eq!(bits::get(&raw.counted_bits, s), raw.live[i] > 0);
        // Stamp bits only inside runs of idle slots.
        let shares = bits::get(&raw.stamp_bits, s);
        prop_assert_eq!(raw.is_idle(s), idle);
        prop_assert!(!shares || (idle && s > 0 && map.is_idle(s - 1)));
        if idle {
            prop_assert_eq!(map.stamp_of(s), model.stamp[i], "stamp of {}", s);
        }
    }
    // Each stretch of idle slots is done at a cursor exactly when the
    // model's stamps are all at or below it.
    let completed = op / 2;
    map.completed = completed;
    let idle = |s: u32| model.idle.contains(&s);
    let mut s = 0;
    while s < model.live.len() as u32 {
        if !idle(s) {
            s += 1;
            continue;
        }
        let first = s;
        while idle(s + 1) {
            s += 1;
        }
        let done = (first..=s).all(|t| model.stamp[t as usize] <= completed);
        prop_assert_eq!(map.stamps_done(first, s), done);
        prop_assert_eq!(map.extent_ready(first, s - first + 1), done);
        s += 1;
    }
    let waiting = model
        .idle
        .iter()
        .any(|&t| model.stamp[t as usize] > completed);
    prop_assert_eq!(map.idle_waiting(), waiting);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 500 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn span_claims_and_releases_leave_the_idle_order_of_slot_by_slot_steps(
        ops in prop::collection::vec((0u8..4, 0..40u32, 1u32..=12), 1..80),
    ) {
        check_against_model(ops, 40)?;
    }

    #[test]
    fn spans_of_hundreds_of_slots_leave_the_idle_order_of_slot_by_slot_steps(
        ops in prop::collection::vec((0u8..4, 0..300u32, 1u32..=200), 1..60),
    ) {
        check_against_model(ops, 300)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { 120 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    // Spans of many words: claims whose inside words one idle run holds
    // (marked with no check) or not, and runs whose ends are found past
    // blocks of eight chain words.
    #[test]
    fn spans_of_thousands_of_slots_leave_the_idle_order_of_slot_by_slot_steps(
        ops in prop::collection::vec((0u8..4, 0..1_600u32, 1u32..=1_400), 1..30),
    ) {
        check_against_model(ops, 1_600)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 2 } else { 200 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    // Spans of many words released and claimed again in place or in
    // part (their inside words left uniform, held and rested in turn,
    // and settled when a part is claimed), against slot-by-slot steps.
    #[test]
    fn large_spans_reused_in_place_or_in_part_leave_the_state_of_slot_by_slot_steps(
        ops in prop::collection::vec((0u8..6, 0..1_600u32, 1u32..=1_400), 1..40),
    ) {
        check_against_model(ops, 1_600)?;
    }

    // Spans of two to five words, fewer inside words than turn uniform,
    // reused in place or in part: the one idle run that crosses them
    // claimed and queued by its end words' bits, with no search along it.
    #[test]
    fn spans_of_a_few_words_reused_in_place_or_in_part_leave_the_state_of_slot_by_slot_steps(
        ops in prop::collection::vec((0u8..6, 0..400u32, 60u32..=320), 1..50),
    ) {
        check_against_model(ops, 400)?;
    }
}

#[test]
fn a_large_span_reused_in_place_keeps_its_inside_words_uniform() {
    let mut map = mapped(4200);
    map.claim_mapped_span(0..=1);
    map.claim_mapped_span(4098..=4099);
    // The first claim writes the columns; from the first release on, the
    // 62 words inside are uniform, rested and held in turn.
    for round in 1..=4 {
        map.claim_mapped_span(1..=4098);
        assert!((2..4098).all(|s| map.is_live(s) && !map.is_idle(s)));
        map.submitted = round;
        map.release_span(1..=4098);
        assert_eq!(map.uniform_words, 63);
        assert!(map.all_uniform(1, 64, true));
        assert_eq!(map.idle_order(), (2..4098).collect::<Vec<_>>());
        assert!((2..4098).all(|s| map.stamp_of(s) == round));
    }
    map.claim_mapped_span(1..=4098);
    assert!(map.all_uniform(1, 64, false));
    // A slice inside the held words is refused by no check here, but a
    // slot claimed in a rested word settles it: free the span, claim one.
    map.release_span(1..=4098);
    map.claim_mapped_span(2000..=2000);
    assert_eq!(map.uniform_words, 60);
    assert_eq!(map.idle_count, 4096 - 1);
    assert!(!map.is_idle(2000) && map.is_idle(1999) && map.is_idle(2001));
}

#[test]
fn an_idle_chunk_of_uniform_words_is_shed_whole_once_its_work_is_done() {
    let mut map = ChunkMap::new(1 << 16);
    map.set_extent(0, 1000, Some(ChunkId(1)));
    for round in 1..=2 {
        map.claim_mapped_span(0..=999);
        map.submitted = round;
        map.release_span(0..=999);
    }
    assert!(map.uniform_words > 0);
    map.completed = 1;
    assert!(!map.extent_ready(0, 1000), "its work is not done");
    assert!(map.idle_waiting());
    assert_eq!(map.take_idle_extent(&NONE, false, 64), None);
    map.completed = 2;
    assert!(map.extent_ready(0, 1000) && !map.idle_waiting());
    assert_eq!(map.take_idle_extent(&NONE, false, 64), Some((0, 1000)));
    assert_eq!((map.idle_count, map.uniform_words), (0, 0));
    assert!(map.idle_order().is_empty());
}

#[test]
fn a_long_span_is_marked_by_covered_bits_with_counts_only_on_its_shared_ends() {
    let mut map = mapped(4200);
    // Neighbours sharing the span's end slots, 1 and 4098.
    map.claim_mapped_span(0..=1);
    map.claim_mapped_span(4098..=4099);
    for round in 1..=3 {
        map.claim_mapped_span(1..=4098);
        assert!(map.live[2..4098].iter().all(|&l| l == 0), "no count inside");
        assert!((2..4098).all(|s| map.is_live(s) && map.live_count(s) == 1));
        assert_eq!((map.live_count(1), map.live_count(4098)), (2, 2));
        assert_eq!(map.idle_count, 0);
        map.submitted = round;
        map.release_span(1..=4098);
        // The slots inside go idle as one run, stamped once at its head.
        assert_eq!(map.idle_order(), (2..4098).collect::<Vec<_>>());
        assert!((2..4098).all(|s| map.stamp_of(s) == round));
        assert!(map.stamp[3..4098].iter().all(|&s| s == 0), "no stamp fill");
        assert_eq!((map.live_count(1), map.live_count(4098)), (1, 1));
    }
}
