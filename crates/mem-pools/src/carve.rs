//! Carving slices: reserve in a pool (find, split) and free (coalesce).
//!
//! Finding is one free-index lookup; splitting inserts one node after the
//! chosen slice; freeing merges with at most two neighbours found through the
//! slice's own links. No step walks a page or a pool, so the cost per
//! reservation is flat in the number of live slices.

use mem_storage::ComputeStorage;

use crate::arena::SliceNode;
use crate::core::Core;
use crate::error::IoError;
use crate::pool::PoolKind;
use crate::slots::NIL;

/// What a reservation may do beyond reusing free slices.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Allowance {
    /// Allocate new storage pages (false inside a capture window).
    pub(crate) allocate: bool,
    /// Release pages that empty (false during a capture).
    pub(crate) release: bool,
}

impl Core {
    /// Reserve `size` bytes in `pool` for slot `owner`; returns the slice.
    pub(crate) fn reserve_in<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        pool: u32,
        size: u64,
        owner: u32,
        allow: Allowance,
    ) -> Result<u32, IoError> {
        let cap = self.capacity(size)?;
        let kind = self.pool(pool).kind;
        let found = match kind {
            PoolKind::Sliced { .. } => {
                if cap > self.pool(pool).page_size {
                    self.grow(storage, pool, cap, size, allow.allocate, allow.release)?;
                }
                self.pool(pool).index.find(&self.slices, cap)
            }
            PoolKind::Exclusive { .. } => self
                .pool(pool)
                .index
                .find(&self.slices, cap)
                .filter(|&s| self.slices[s].size / 2 <= cap),
            PoolKind::Persistent => self.pool(pool).index.find(&self.slices, cap),
        };
        let slice = match found {
            Some(slice) => slice,
            None => {
                let page_size = match kind {
                    PoolKind::Sliced { .. } => self.pool(pool).page_size,
                    _ => cap,
                };
                let page = self.new_page(storage, pool, page_size, size, allow.allocate)?;
                self.pages[page].head
            }
        };
        if matches!(kind, PoolKind::Sliced { .. }) && self.slices[slice].size > cap {
            self.split(slice, cap)?;
        }
        self.index_remove(pool, slice);
        self.occupy(slice, size, owner);
        Ok(slice)
    }

    /// Claim exactly `offset..offset + cap` of `page` for `owner` if that
    /// range lies inside one free slice (splitting it as needed). `None`
    /// when the range is (partly) live or cannot be cut.
    pub(crate) fn carve_extent(
        &mut self,
        page: u32,
        offset: u64,
        cap: u64,
        requested: u64,
        owner: u32,
    ) -> Result<Option<u32>, IoError> {
        let Some(info) = self.pages.get(page) else {
            return Ok(None);
        };
        let sliced = matches!(self.pool(info.pool).kind, PoolKind::Sliced { .. });
        let mut node = info.head;
        while node != NIL {
            let n = &self.slices[node];
            if n.offset <= offset && offset < n.offset + n.size.max(1) {
                break;
            }
            node = n.next;
        }
        if node == NIL {
            return Ok(None);
        }
        let n = &self.slices[node];
        let fits = n.is_free() && !n.quarantined && offset + cap <= n.offset + n.size;
        let exact = n.offset == offset && n.size == cap;
        if !fits || !(exact || (sliced && n.indexed)) {
            return Ok(None);
        }
        if n.offset < offset {
            let front = offset - n.offset;
            self.split(node, front)?;
            node = self.slices[node].next;
        }
        if self.slices[node].size > cap {
            self.split(node, cap)?;
        }
        let pool = self.pages[page].pool;
        self.index_remove(pool, node);
        self.occupy(node, requested, owner);
        Ok(Some(node))
    }

    /// Cut `slice` (free, indexed) to `cap` bytes; the rest becomes a free
    /// slice right after it, indexed.
    fn split(&mut self, slice: u32, cap: u64) -> Result<(), IoError> {
        let node = &self.slices[slice];
        let rest = SliceNode {
            page: node.page,
            offset: node.offset + cap,
            size: node.size - cap,
            requested: 0,
            prev: slice,
            next: node.next,
            free_prev: NIL,
            free_next: NIL,
            owner: NIL,
            cursor: 0,
            raw_out: false,
            pinned: false,
            quarantined: false,
            indexed: false,
        };
        let next = node.next;
        let pool = self.pages[node.page].pool;
        let rest = self.slices.insert(rest)?;
        self.index_remove(pool, slice);
        self.slices[slice].size = cap;
        self.slices[slice].next = rest;
        if next != NIL {
            self.slices[next].prev = rest;
        }
        self.index_insert(pool, rest);
        Ok(())
    }

    /// Mark a free, unindexed slice live for `owner` and count it.
    pub(crate) fn occupy(&mut self, slice: u32, size: u64, owner: u32) {
        let node = &mut self.slices[slice];
        node.owner = owner;
        node.requested = size;
        node.cursor = 0;
        let (cap, page) = (node.size, node.page);
        let info = &mut self.pages[page];
        info.live += 1;
        info.live_bytes += cap;
        let pool = info.pool;
        let usage = &mut self.pool_mut(pool).usage;
        usage.slices += 1;
        usage.bytes_in_use += size;
        usage.bytes_padding += cap - size;
        usage.largest_alloc = usage.largest_alloc.max(size);
        usage.mark();
        self.stats.on_reserve(cap, size);
    }

    /// Free a live slice: back into its pool's index (coalesced), or — on an
    /// outdated page — release the page once it is empty. A quarantined slice
    /// is never reused.
    pub(crate) fn free_slice<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        slice: u32,
        release: bool,
    ) {
        let node = &mut self.slices[slice];
        if node.is_free() {
            return;
        }
        let (cap, size, page) = (node.size, node.requested, node.page);
        let (raw, pinned, quarantined) = (node.raw_out, node.pinned, node.quarantined);
        node.owner = NIL;
        node.requested = 0;
        node.raw_out = false;
        node.pinned = false;
        let info = &mut self.pages[page];
        info.live -= 1;
        info.live_bytes -= cap;
        info.raw_out -= u32::from(raw);
        info.pinned -= u32::from(pinned);
        let (pool, outdated, empty) = (
            info.pool,
            info.outdated,
            info.live == 0 && info.quarantined == 0,
        );
        if empty {
            info.idle_since = self.clock;
        }
        let usage = &mut self.pool_mut(pool).usage;
        usage.slices -= 1;
        usage.bytes_in_use -= size;
        usage.bytes_padding -= cap - size;
        self.stats.on_free(cap, size);
        if quarantined {
            return;
        }
        if outdated {
            if empty && release {
                self.release_page(storage, page);
            }
            return;
        }
        let mut slice = slice;
        if matches!(self.pool(pool).kind, PoolKind::Sliced { .. }) {
            let next = self.slices[slice].next;
            if next != NIL && self.slices[next].indexed {
                self.merge_into(slice, next);
            }
            let prev = self.slices[slice].prev;
            if prev != NIL && self.slices[prev].indexed {
                self.merge_into(prev, slice);
                slice = prev;
            }
        }
        self.index_insert(pool, slice);
    }

    /// Absorb `right` (free) into its left neighbour `left`.
    fn merge_into(&mut self, left: u32, right: u32) {
        let pool = self.pages[self.slices[left].page].pool;
        self.index_remove(pool, left);
        self.index_remove(pool, right);
        let (size, next) = (self.slices[right].size, self.slices[right].next);
        self.slices[left].size += size;
        self.slices[left].next = next;
        if next != NIL {
            self.slices[next].prev = left;
        }
        self.slices.remove(right);
    }
}

#[cfg(test)]
mod tests {
    use mem_storage::HostStorage;

    use super::*;
    use crate::config::{PoolSpec, PoolType};
    use crate::pool::Pool;

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

    #[test]
    fn reserving_splits_the_page_and_freeing_coalesces_it_back_to_one_slice() {
        let (mut core, mut storage) = core(4096, 4096);
        let a = core.reserve_in(&mut storage, 0, 1000, 1, ALLOW).unwrap();
        let b = core.reserve_in(&mut storage, 0, 256, 2, ALLOW).unwrap();
        let page = core.slices[a].page;
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
        assert_eq!(core.pool(0).index.largest(&core.slices), 4096);
    }

    #[test]
    fn a_full_page_leads_to_a_second_page_not_an_overlap() {
        let (mut core, mut storage) = core(4096, 4096);
        let a = core.reserve_in(&mut storage, 0, 4096, 1, ALLOW).unwrap();
        let b = core.reserve_in(&mut storage, 0, 256, 2, ALLOW).unwrap();
        assert_ne!(core.slices[a].page, core.slices[b].page);
        assert_eq!(core.pool(0).usage.pages, 2);
        assert_eq!(core.stats.storage_allocs, 2);
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
        assert_eq!(core.stats.storage_allocs, 0);
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
        assert_eq!(core.pages[core.slices[big].page].size, 16384);
        // The outdated page's free tail serves nothing.
        let small = core.reserve_in(&mut storage, 0, 256, 4, ALLOW).unwrap();
        assert_eq!(core.slices[small].page, core.slices[big].page);
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
        let page = core.slices[a].page;
        core.free_slice(&mut storage, a, true);
        let got = core.carve_extent(page, 1024, 512, 500, 7).unwrap().unwrap();
        assert_eq!(
            (core.slices[got].offset, core.slices[got].size),
            (1024, 512)
        );
        assert_eq!(
            layout(&core, page),
            vec![(0, 1024, true), (1024, 512, false), (1536, 2560, true)]
        );
        assert_eq!(
            core.carve_extent(page, 1024, 512, 500, 8).unwrap(),
            None,
            "already live"
        );
    }
}
