//! Generated operation sequences against the model's invariants: blocks
//! tile every segment, free neighbours are merged, the free set is exactly
//! the free blocks, and reserved and live bytes add up.

use std::collections::BTreeSet;

use gpumem::storage::DriverCosts;
use gpumem::storage::units::{GIB, MIB};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::blocks::Block;
use super::*;

impl CachingAllocator {
    fn check(&self) {
        let mut held = 0;
        let mut tiled = 0;
        for (&id, segment) in &self.segments {
            // An expandable segment spans its whole address range, mapped
            // or not; a plain one its bytes.
            let span = segment.span;
            if !self.policy.expandable {
                assert_eq!(span, segment.bytes);
            }
            let mut cursor = segment.base;
            let mut previous: Option<Block> = None;
            for (&addr, block) in self.blocks.range(segment.base..segment.base + span) {
                assert_eq!(addr, cursor, "segment {id}: a gap or overlap at {addr:#x}");
                assert_eq!(block.segment, id);
                assert_eq!(block.mapped, !self.unmapped.contains(&addr), "{addr:#x}");
                if block.mapped {
                    assert_eq!(block.size % MIN_BLOCK, 0, "{block:?}");
                    held += block.size;
                } else {
                    assert!(block.requested.is_none());
                }
                if let Some(p) = previous {
                    let both_free = p.requested.is_none() && block.requested.is_none();
                    assert!(
                        !(both_free && p.mapped == block.mapped),
                        "unmerged neighbours at {addr:#x}"
                    );
                }
                previous = Some(*block);
                cursor += block.size;
                tiled += 1;
            }
            assert_eq!(cursor, segment.base + span, "segment {id} not tiled");
            let mapped: u64 = self
                .blocks
                .range(segment.base..segment.base + span)
                .filter(|(_, b)| b.mapped)
                .map(|(_, b)| b.size)
                .sum();
            assert_eq!(mapped, segment.bytes, "segment {id}'s held bytes");
        }
        assert_eq!(tiled, self.blocks.len(), "a block outside every segment");
        let free: BTreeSet<_> = self
            .blocks
            .iter()
            .filter(|(_, b)| b.requested.is_none() && b.mapped)
            .map(|(&a, b)| (b.pool, b.stream, b.size, a))
            .collect();
        assert_eq!(free, self.free);
        assert_eq!(held, self.reserved_bytes());
        assert!(self.reserved_bytes() <= self.capacity);
        assert!(self.peak_reserved_bytes() >= self.reserved_bytes());
        let live: u64 = self.blocks.values().filter_map(|b| b.requested).sum();
        assert_eq!(live, self.live_bytes());
        if self.policy.expandable {
            let ranges: u64 = self.mapped_ranges().iter().map(|r| r.bytes).sum();
            assert_eq!(ranges, self.reserved_bytes(), "mapped runs add up");
            let listed: usize = self.expandable.values().map(Vec::len).sum();
            assert_eq!(listed, self.segments.len(), "every segment listed once");
            for ids in self.expandable.values() {
                assert!(ids.iter().all(|id| self.segments.contains_key(id)));
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    Malloc(u64, u64),
    Free(usize),
    Release,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u64..2 * MIB, 0u64..3).prop_map(|(s, t)| Op::Malloc(s, t)),
        2 => (1u64..40 * MIB, 0u64..3).prop_map(|(s, t)| Op::Malloc(s, t)),
        5 => any::<usize>().prop_map(Op::Free),
        1 => Just(Op::Release),
    ]
}

fn policy() -> impl Strategy<Value = Policy> {
    (
        any::<bool>(),
        prop_oneof![Just(u64::MAX), Just(32 * MIB)],
        prop_oneof![Just(0u64), Just(4)],
    )
        .prop_map(
            |(expandable, max_split_size, roundup_power2_divisions)| Policy {
                max_split_size,
                roundup_power2_divisions,
                expandable,
            },
        )
}

proptest! {
    #[test]
    fn any_sequence_keeps_segments_tiled_and_the_counts_exact(
        policy in policy(),
        ops in proptest::collection::vec(op(), 1..200),
    ) {
        let mut m = CachingAllocator::new(policy, 256 * MIB, DriverCosts::A100);
        let mut live: Vec<u64> = Vec::new();
        for op in ops {
            match op {
                Op::Malloc(size, stream) => {
                    if let Ok(addr) = m.malloc(size, stream) {
                        live.push(addr);
                    }
                }
                Op::Free(i) if !live.is_empty() => {
                    let addr = live.swap_remove(i % live.len());
                    m.free(addr).unwrap();
                }
                Op::Free(_) => {}
                Op::Release => m.release_cached(),
            }
            m.check();
        }
        for addr in live {
            m.free(addr).unwrap();
        }
        m.check();
        m.release_cached();
        m.check();
        prop_assert_eq!(m.reserved_bytes(), 0, "every segment (or page) is free and released");
    }
}

#[test]
fn test_allocator_fuzz_keeps_expandable_segments_tiled_and_unmaps_on_empty_cache() {
    // `test_allocator_fuzz` of PyTorch's test_cuda.py (which
    // test_cuda_expandable_segments.py reruns with expandable segments):
    // int32 tensors of 2 to 20 MiB allocated, freed and `empty_cache()`
    // at weights 1 : 1 : 0.1, live elements kept under 2^30 / 40. PyTorch
    // checks that no tensor's contents were overwritten; here, that blocks
    // tile their segments (no two overlap) after every step.
    let policy = Policy {
        expandable: true,
        ..Policy::default()
    };
    let mut m = CachingAllocator::new(policy, GIB, DriverCosts::A100);
    let mut rng = SmallRng::seed_from_u64(123);
    let mut live: Vec<(u64, u64)> = Vec::new();
    let mut total = 0u64;
    let free = |m: &mut CachingAllocator, live: &mut Vec<(u64, u64)>, rng: &mut SmallRng| {
        let (addr, elems) = live.swap_remove(rng.random_range(0..live.len()));
        m.free(addr).unwrap();
        elems
    };
    for _ in 0..10_000 {
        while total >= GIB / 40 {
            total -= free(&mut m, &mut live, &mut rng);
        }
        let weight = if live.is_empty() { 1.1 } else { 2.1 };
        let pick: f64 = rng.random_range(0.0..weight);
        if pick < 1.0 {
            let elems = rng.random_range(2 * MIB / 4..20 * MIB / 4);
            live.push((m.malloc(4 * elems, 0).unwrap(), elems));
            total += elems;
        } else if pick < weight - 0.1 {
            total -= free(&mut m, &mut live, &mut rng);
        } else {
            m.release_cached();
        }
        m.check();
    }
    let c = m.calls();
    assert_eq!(
        m.reserved_bytes(),
        (c.pages_mapped - c.pages_unmapped) * 20 * MIB
    );
    assert!(c.pages_unmapped > 0 && c.segment_unmaps > 0, "{c:?}");
    assert_eq!(c.retries, 0, "{c:?}");
}
