//! Tests of `chunk_spans.rs`: whole-span claims and releases (runs
//! unlinked and queued at once, counts and idle bits a word at a time)
//! against slot-by-slot steps, on short spans and on spans of hundreds of
//! slots that cross bit words and the 16-slot compare blocks.

use std::collections::VecDeque;
use std::ops::RangeInclusive;

use mem_storage::ChunkId;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

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
/// unlink and queue whole runs at once) must match.
struct Model {
    live: Vec<u32>,
    mapped: Vec<bool>,
    idle: VecDeque<u32>,
}

impl Model {
    fn claim(&mut self, span: RangeInclusive<u32>) {
        for s in span {
            self.live[s as usize] += 1;
            self.idle.retain(|&t| t != s);
        }
    }

    fn release(&mut self, span: RangeInclusive<u32>) {
        for s in span {
            self.live[s as usize] -= 1;
            if self.live[s as usize] == 0 && self.mapped[s as usize] {
                self.idle.push_back(s);
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
        s = map.older_of(s);
    }
    order.reverse();
    order
}

/// Replays `ops` (claim, claim, release, trim: at slot `at`, `len`
/// slots) on a map of `slots` mapped slots and on the model, comparing
/// the idle order both ways, the counts and the idle bits after each.
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
    };
    let mut live_spans: Vec<RangeInclusive<u32>> = Vec::new();
    for (kind, at, len) in ops {
        match kind {
            0 | 1 => {
                let span = at..=(at + len - 1).min(slots - 1);
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
                map.release_span(span.clone());
                model.release(span);
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
        prop_assert_eq!(&map.live[..model.live.len()], &model.live[..]);
        for s in 0..map.slots.len() as u32 {
            prop_assert_eq!(map.is_idle(s), model.idle.contains(&s));
        }
    }
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
