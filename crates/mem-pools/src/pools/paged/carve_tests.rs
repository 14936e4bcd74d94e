//! Unit tests of `carve`.

use mem_storage::HostStorage;

use super::*;
use crate::config::{Growth, PoolSpec, PoolType};
use crate::pools::core::Core;

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
        growth: Growth::Doubling,
    });
    (
        Core::new(vec![pool], 256, 1 << 20, false),
        HostStorage::host(),
    )
}

/// (offset, size, free) of every slice of a page, in address order.
fn layout(core: &Core, page: u32) -> Vec<(u64, u64, bool)> {
    let mut out = Vec::new();
    let mut node = core.tables.pages[page].head;
    while node != NIL {
        let n = &core.tables.slices[node];
        out.push((n.offset, n.size, n.is_free()));
        node = n.next;
    }
    out
}

#[test]
fn reserving_splits_the_page_and_freeing_coalesces_it_back_to_one_slice() {
    let (mut core, mut storage) = core(4096, 4096);
    let a = core.reserve_in(&mut storage, 0, 1000, 1, ALLOW).unwrap();
    let b = core.reserve_in(&mut storage, 0, 256, 2, ALLOW).unwrap();
    let page = core.tables.slices[a].page;
    assert_eq!(
        layout(&core, page),
        vec![(0, 1024, false), (1024, 256, false), (1280, 2816, true)]
    );
    core.free_slice(&mut storage, a, true);
    assert_eq!(
        layout(&core, page),
        vec![(0, 1024, true), (1024, 256, false), (1280, 2816, true)]
    );
    core.free_slice(&mut storage, b, true);
    assert_eq!(layout(&core, page), vec![(0, 4096, true)]);
    assert_eq!(core.pool(0).usage.slices, 0);
    assert_eq!(core.pool(0).index.largest(&core.tables.slices), 4096);
}

#[test]
fn a_full_page_leads_to_a_second_page_not_an_overlap() {
    let (mut core, mut storage) = core(4096, 4096);
    let a = core.reserve_in(&mut storage, 0, 4096, 1, ALLOW).unwrap();
    let b = core.reserve_in(&mut storage, 0, 256, 2, ALLOW).unwrap();
    assert_ne!(core.tables.slices[a].page, core.tables.slices[b].page);
    assert_eq!(core.pool(0).usage.pages, 2);
    assert_eq!(core.tables.stats.storage_allocs, 2);
}

#[test]
fn a_refused_page_allocation_changes_nothing() {
    let (mut core, mut storage) = core(4096, 4096);
    let held = Allowance {
        allocate: false,
        release: false,
    };
    let err = core.reserve_in(&mut storage, 0, 100, 1, held).unwrap_err();
    assert_eq!(
        err,
        IoError::CaptureWouldAllocate {
            size: 100,
            page_size: 4096
        }
    );
    assert_eq!(core.pool(0).usage, Default::default());
    assert_eq!(core.tables.stats.storage_allocs, 0);
}

#[test]
fn growth_outdates_older_pages_and_releases_the_empty_ones_at_once() {
    let (mut core, mut storage) = core(4096, 65536);
    let a = core.reserve_in(&mut storage, 0, 1000, 1, ALLOW).unwrap();
    let _ = core.reserve_in(&mut storage, 0, 4096, 2, ALLOW).unwrap(); // second 4 KiB page
    let big = core.reserve_in(&mut storage, 0, 10_000, 3, ALLOW).unwrap();
    let pool = core.pool(0);
    assert_eq!(pool.page_size, 16384);
    assert_eq!(pool.outdated.len(), 2);
    assert_eq!(core.tables.pages[core.tables.slices[big].page].size, 16384);
    // The outdated page's free tail serves nothing.
    let small = core.reserve_in(&mut storage, 0, 256, 4, ALLOW).unwrap();
    assert_eq!(core.tables.slices[small].page, core.tables.slices[big].page);
    core.free_slice(&mut storage, a, true);
    assert_eq!(
        core.pool(0).outdated.len(),
        1,
        "emptied outdated page released"
    );
    assert_eq!(core.pool(0).outdated_sizes.get(&4096), Some(&1));
}

#[test]
fn carving_an_exact_extent_out_of_a_free_slice_splits_on_both_sides() {
    let (mut core, mut storage) = core(4096, 4096);
    let a = core.reserve_in(&mut storage, 0, 256, 1, ALLOW).unwrap();
    let page = core.tables.slices[a].page;
    core.free_slice(&mut storage, a, true);
    let got = core
        .carve_extent(page, (1024, 512), 500, 7)
        .unwrap()
        .unwrap();
    assert_eq!(
        (core.tables.slices[got].offset, core.tables.slices[got].size),
        (1024, 512)
    );
    assert_eq!(
        layout(&core, page),
        vec![(0, 1024, true), (1024, 512, false), (1536, 2560, true)]
    );
    assert_eq!(
        core.carve_extent(page, (1024, 512), 500, 8).unwrap(),
        None,
        "already live"
    );
}

/// Every slice of `page` is where its start index says: its first and
/// last unit name it.
fn assert_starts_agree(core: &Core, page: u32) {
    let t = &core.tables;
    let starts = t.pages[page].starts.as_ref().expect("built");
    let mut node = t.pages[page].head;
    while node != NIL {
        let n = &t.slices[node];
        assert_eq!(starts.holding(t.unit(n.offset)), Some(node));
        assert_eq!(starts.holding(t.unit(n.offset + n.size - 1)), Some(node));
        node = n.next;
    }
}

#[test]
fn the_start_index_is_built_on_the_first_extent_lookup_and_kept_after() {
    let (mut core, mut storage) = core(4096, 4096);
    let s: Vec<u32> = (0..4)
        .map(|i| core.reserve_in(&mut storage, 0, 256, i, ALLOW).unwrap())
        .collect();
    let page = core.tables.slices[s[0]].page;
    assert!(
        core.tables.pages[page].starts.is_none(),
        "not before a lookup"
    );
    core.free_slice(&mut storage, s[1], true);
    core.free_slice(&mut storage, s[2], true);
    // The walk finds the free 256..768 among five slices.
    let got = core
        .carve_extent(page, (512, 256), 200, 9)
        .unwrap()
        .unwrap();
    assert_eq!(core.tables.slices[got].offset, 512);
    assert_starts_agree(&core, page);
    // Split and coalesce keep it from then on.
    core.free_slice(&mut storage, s[3], true);
    let again = core.reserve_in(&mut storage, 0, 768, 10, ALLOW).unwrap();
    core.free_slice(&mut storage, got, true);
    assert_starts_agree(&core, page);
    let tail = core.carve_extent(page, (256, 256), 200, 11).unwrap();
    assert_eq!(tail.map(|n| core.tables.slices[n].offset), Some(256));
    assert_starts_agree(&core, page);
    core.free_slice(&mut storage, again, true);
    assert_starts_agree(&core, page);
}
