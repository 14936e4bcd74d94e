//! Unit tests of `reuse`: the listed slice is reused whole where the free
//! index would have placed the reservation, flushed before anything else,
//! and counted as free.

use mem_storage::HostStorage;

use super::*;
use crate::carve::Allowance;
use crate::config::{PoolSpec, PoolType};

const ALLOW: Allowance = Allowance {
    allocate: true,
    release: true,
};

fn core(page_size: u64, max_slice_size: u64) -> (Core, HostStorage) {
    let pool = Pool::from_spec(&PoolSpec {
        pool_type: PoolType::SlicedPages {
            page_size,
            max_slice_size,
        },
        dealloc_period: None,
    });
    (
        Core::new(vec![pool], 256, 1 << 20, false),
        HostStorage::host(),
    )
}

/// (offset, size, free) of every slice of a page, in address order.
fn layout(core: &Core, page: u32) -> Vec<(u64, u64, bool)> {
    let mut out = Vec::new();
    let mut node = core.pages[page].head;
    while node != NIL {
        let n = &core.slices[node];
        out.push((n.offset, n.size, n.is_free()));
        node = n.next;
    }
    out
}

/// Every page's layout, in page order.
fn layouts(core: &Core) -> Vec<Vec<(u64, u64, bool)>> {
    (0..64)
        .filter(|&p| core.pages.get(p).is_some())
        .map(|p| layout(core, p))
        .collect()
}

#[test]
fn a_freed_slice_of_the_same_size_is_reused_without_a_split() {
    let (mut core, mut storage) = core(4096, 4096);
    let a = core.reserve_in(&mut storage, 0, 1000, 1, ALLOW).unwrap();
    let _b = core.reserve_in(&mut storage, 0, 256, 2, ALLOW).unwrap();
    let page = core.slices[a].page;
    let before = layout(&core, page);
    core.free_dropped(&mut storage, a, true);
    assert_eq!(core.pool(0).reuse, Some(a));
    assert_eq!(
        layout(&core, page),
        vec![(0, 1024, true), (1024, 256, false), (1280, 2816, true)]
    );
    let again = core.reserve_in(&mut storage, 0, 900, 3, ALLOW).unwrap();
    assert_eq!(again, a, "the listed node itself comes back");
    assert_eq!(layout(&core, page), before);
    assert_eq!(core.slices[a].requested, 900);
    assert_eq!(core.pool(0).reuse, None);
    assert_eq!(core.pool(0).usage.slices, 2);
}

#[test]
fn the_last_slice_before_a_free_tail_is_reused_in_place_of_a_coalesce_and_a_split() {
    let (mut core, mut storage) = core(4096, 4096);
    let _a = core.reserve_in(&mut storage, 0, 1024, 1, ALLOW).unwrap();
    let b = core.reserve_in(&mut storage, 0, 1024, 2, ALLOW).unwrap();
    let page = core.slices[b].page;
    core.free_dropped(&mut storage, b, true);
    assert_eq!(core.reserve_in(&mut storage, 0, 1024, 3, ALLOW).unwrap(), b);
    assert_eq!(
        layout(&core, page),
        vec![(0, 1024, false), (1024, 1024, false), (2048, 2048, true)]
    );
}

#[test]
fn a_reservation_of_another_size_is_placed_as_if_nothing_had_been_listed() {
    let (mut listed, mut s1) = core(4096, 4096);
    let (mut coalesced, mut s2) = core(4096, 4096);
    for (c, s, drop) in [
        (&mut listed, &mut s1, true),
        (&mut coalesced, &mut s2, false),
    ] {
        let a = c.reserve_in(s, 0, 1024, 1, ALLOW).unwrap();
        let _b = c.reserve_in(s, 0, 1024, 2, ALLOW).unwrap();
        let d = c.reserve_in(s, 0, 1024, 3, ALLOW).unwrap();
        for slice in [a, d] {
            if drop {
                c.free_dropped(s, slice, true);
            } else {
                c.free_slice(s, slice, true);
            }
        }
        c.reserve_in(s, 0, 2048, 4, ALLOW).unwrap();
    }
    assert_eq!(listed.pool(0).reuse, None);
    assert_eq!(layouts(&listed), layouts(&coalesced));
    assert_eq!(
        layouts(&listed),
        vec![vec![
            (0, 1024, true),
            (1024, 1024, false),
            (2048, 2048, false)
        ]]
    );
}

#[test]
fn a_slice_after_a_free_one_is_not_reused_where_the_coalesced_block_would_start_earlier() {
    let (mut core, mut storage) = core(4096, 4096);
    let a = core.reserve_in(&mut storage, 0, 1024, 1, ALLOW).unwrap();
    let b = core.reserve_in(&mut storage, 0, 1024, 2, ALLOW).unwrap();
    let _c = core.reserve_in(&mut storage, 0, 2048, 3, ALLOW).unwrap();
    let page = core.slices[a].page;
    core.free_dropped(&mut storage, a, true);
    core.free_dropped(&mut storage, b, true);
    // Coalesced, a and b are one block at 0: the good fit splits it there.
    let again = core.reserve_in(&mut storage, 0, 1024, 4, ALLOW).unwrap();
    assert_eq!(core.slices[again].offset, 0);
    assert_eq!(
        layout(&core, page),
        vec![(0, 1024, false), (1024, 1024, true), (2048, 2048, false)]
    );
}

#[test]
fn listed_slices_are_coalesced_before_the_pool_takes_a_new_page() {
    let (mut core, mut storage) = core(4096, 4096);
    let a = core.reserve_in(&mut storage, 0, 2048, 1, ALLOW).unwrap();
    let b = core.reserve_in(&mut storage, 0, 2048, 2, ALLOW).unwrap();
    let page = core.slices[a].page;
    core.free_dropped(&mut storage, a, true);
    core.free_dropped(&mut storage, b, true);
    core.reserve_in(&mut storage, 0, 4096, 3, ALLOW).unwrap();
    assert_eq!(layout(&core, page), vec![(0, 4096, false)]);
    assert_eq!(core.pool(0).usage.pages, 1, "no second page");
    assert_eq!(core.stats.storage_allocs, 1);
}

#[test]
fn the_listed_slice_is_flushed_before_the_pool_grows_and_never_serves_an_outdated_page() {
    let (mut core, mut storage) = core(4096, 16384);
    let a = core.reserve_in(&mut storage, 0, 1024, 1, ALLOW).unwrap();
    let _keep = core.reserve_in(&mut storage, 0, 1024, 2, ALLOW).unwrap();
    let old = core.slices[a].page;
    core.free_dropped(&mut storage, a, true);
    core.reserve_in(&mut storage, 0, 8192, 3, ALLOW).unwrap();
    assert!(core.pages[old].outdated);
    assert_eq!(core.pool(0).reuse, None);
    let c = core.reserve_in(&mut storage, 0, 1024, 4, ALLOW).unwrap();
    assert_ne!(core.slices[c].page, old, "an outdated page serves nothing");
}

#[test]
fn releasing_a_page_flushes_its_listed_slice_first() {
    let (mut core, mut storage) = core(4096, 4096);
    let a = core.reserve_in(&mut storage, 0, 1024, 1, ALLOW).unwrap();
    let page = core.slices[a].page;
    core.free_dropped(&mut storage, a, true);
    core.release_page(&mut storage, page);
    assert_eq!(core.pool(0).reuse, None);
    assert_eq!(core.pool(0).usage.pages, 0);
    // The pool works on: nothing listed names a removed node.
    core.reserve_in(&mut storage, 0, 1024, 2, ALLOW).unwrap();
    assert_eq!(core.pool(0).usage.slices, 1);
}

#[test]
fn reports_count_the_listed_slice_as_free_and_as_part_of_the_largest_free_block() {
    let (mut listed, mut s1) = core(4096, 4096);
    let (mut coalesced, mut s2) = core(4096, 4096);
    for (c, s, drop) in [
        (&mut listed, &mut s1, true),
        (&mut coalesced, &mut s2, false),
    ] {
        let slices: Vec<u32> = (1..=3)
            .map(|owner| c.reserve_in(s, 0, 1024, owner, ALLOW).unwrap())
            .collect();
        // The second and the third, next to the free tail: 3 KiB free.
        for &slice in &slices[1..] {
            if drop {
                c.free_dropped(s, slice, true);
            } else {
                c.free_slice(s, slice, true);
            }
        }
    }
    assert!(listed.pool(0).reuse.is_some());
    assert_eq!(listed.pool(0).usage, coalesced.pool(0).usage);
    assert_eq!(listed.stats, coalesced.stats);
    assert_eq!(listed.largest_free(listed.pool(0)), 3072);
    assert_eq!(coalesced.largest_free(coalesced.pool(0)), 3072);
}

#[test]
fn frees_inside_a_capture_window_are_coalesced_not_listed() {
    let (mut core, mut storage) = core(4096, 4096);
    let a = core.reserve_in(&mut storage, 0, 1024, 1, ALLOW).unwrap();
    let page = core.slices[a].page;
    core.free_dropped(&mut storage, a, false);
    assert_eq!(core.pool(0).reuse, None);
    assert_eq!(layout(&core, page), vec![(0, 4096, true)]);
}

#[test]
fn a_slice_above_the_byte_bound_is_coalesced_not_listed() {
    let pool = Pool::from_spec(&PoolSpec {
        pool_type: PoolType::SlicedPages {
            page_size: 2 * MAX_LISTED_BYTES,
            max_slice_size: 2 * MAX_LISTED_BYTES,
        },
        dealloc_period: None,
    });
    // Lazy: the page gets no memory.
    let (mut core, mut storage) = (
        Core::new(vec![pool], 256, 1 << 30, true),
        HostStorage::host(),
    );
    let s = core
        .reserve_in(&mut storage, 0, MAX_LISTED_BYTES + 256, 1, ALLOW)
        .unwrap();
    core.free_dropped(&mut storage, s, true);
    assert_eq!(core.pool(0).reuse, None, "too large to list");
    assert_eq!(layout(&core, core.slices[s].page).len(), 1);
}

/// A small deterministic generator.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[test]
fn random_reserves_and_frees_place_every_slice_exactly_where_coalescing_at_once_would() {
    let mut hits = 0;
    for seed in 0..40 {
        let (mut listed, mut s1) = core(64 << 10, 256 << 10);
        let (mut coalesced, mut s2) = core(64 << 10, 256 << 10);
        let mut rng = Lcg(seed);
        let mut live: Vec<(u32, u32)> = Vec::new();
        let mut freed = None;
        let sizes = [
            256,
            512,
            1024,
            1280,
            4096,
            6000,
            16 << 10,
            40 << 10,
            100 << 10,
        ];
        for step in 0..600 {
            // Often the size just freed again, as model code does.
            let again = rng.next().is_multiple_of(3);
            if live.is_empty() || rng.next() % 100 < 55 {
                let size = match (again, freed) {
                    (true, Some(size)) => size,
                    _ => sizes[(rng.next() % sizes.len() as u64) as usize],
                };
                let before = listed.pool(0).reuse;
                let a = listed.reserve_in(&mut s1, 0, size, step, ALLOW);
                let b = coalesced.reserve_in(&mut s2, 0, size, step, ALLOW);
                let (a, b) = (a.unwrap(), b.unwrap());
                assert_eq!(
                    (listed.slices[a].page, listed.slices[a].offset),
                    (coalesced.slices[b].page, coalesced.slices[b].offset),
                    "seed {seed} step {step}"
                );
                hits += usize::from(before == Some(a));
                live.push((a, b));
            } else {
                let (a, b) = live.swap_remove((rng.next() % live.len() as u64) as usize);
                freed = Some(listed.slices[a].requested);
                listed.free_dropped(&mut s1, a, true);
                coalesced.free_slice(&mut s2, b, true);
            }
            assert_eq!(listed.pool(0).usage, coalesced.pool(0).usage);
            assert_eq!(
                listed.largest_free(listed.pool(0)),
                coalesced.largest_free(coalesced.pool(0))
            );
        }
        listed.flush_all_listed();
        assert_eq!(layouts(&listed), layouts(&coalesced), "seed {seed}");
    }
    assert!(hits > 500, "the slot served {hits} reservations");
}

#[test]
fn a_reservation_of_another_size_right_after_a_free_moves_the_boundary_instead_of_coalescing_and_splitting()
 {
    let (mut listed, mut s1) = core(64 << 10, 64 << 10);
    let (mut coalesced, mut s2) = core(64 << 10, 64 << 10);
    let mut got = Vec::new();
    for (c, s, drop) in [
        (&mut listed, &mut s1, true),
        (&mut coalesced, &mut s2, false),
    ] {
        let _keep = c.reserve_in(s, 0, 1024, 1, ALLOW).unwrap();
        let mut last = c.reserve_in(s, 0, 512, 2, ALLOW).unwrap();
        for (owner, size) in [(3, 4096), (4, 256), (5, 8192)] {
            if drop {
                c.free_dropped(s, last, true);
            } else {
                c.free_slice(s, last, true);
            }
            last = c.reserve_in(s, 0, size, owner, ALLOW).unwrap();
            got.push(c.slices[last].offset);
        }
    }
    assert_eq!(got, vec![1024, 1024, 1024, 1024, 1024, 1024]);
    let page = listed.slices[0].page;
    assert_eq!(layout(&listed, page), layout(&coalesced, page));
    assert_eq!(
        layout(&listed, page),
        vec![(0, 1024, false), (1024, 8192, false), (9216, 56320, true)]
    );
}
