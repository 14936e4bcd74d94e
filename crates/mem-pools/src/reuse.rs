//! The reuse slot: the last freed slice of a carved pool, kept whole for a
//! reservation of the same capacity.
//!
//! Model code asks for the same sizes every step, so a freed slice is often
//! followed by a reservation of exactly its capacity. Coalescing it at the
//! free and splitting it again at the reservation is the bulk of a
//! reserve+drop pair's cost (two free-index updates, a merge and a split, a
//! slice-start insert and remove, a node taken and given back). A carved
//! pool (sliced, arena) therefore keeps the slice its last dropped handle
//! freed, up to [`MAX_LISTED_BYTES`], *listed*: free in every count, but not
//! coalesced and not in the free index. A reservation of its capacity takes
//! it back with no split and no start-map change (jemalloc's tcache,
//! PyTorch's block reuse); one of another capacity, when the free slice
//! after it can give or take the difference, moves their boundary instead
//! of a coalesce and a split (no node made or removed, one start moved).
//!
//! **Placement stays exactly what it was without the slot.** A listed slice
//! is handed back only where the free index, had the slice been coalesced
//! at its free, would have chosen that coalesced block and split it at the
//! same offset: no free slice before it, and
//! [`crate::free_index::FreeIndex::would_pick_merged`] says the good fit
//! lands on it. Then the free neighbour after it is exactly the split's
//! remainder, and moving it to the head of its bin leaves the index as the
//! split would have. In every other case — another capacity, another
//! reservation, another free, a page or range to take, growth, a page to
//! release, cleanup, relocation or compaction planning, `reclaim_extent`,
//! capture — the slot is flushed first ([`Core::flush_listed`]: the slice
//! coalesces into the index as its free would have, and nothing was
//! inserted into the index in between, so even the bins' order is the
//! same). One slot per pool is what keeps that true: two listed slices
//! would each change the other's answer. So the slot never changes where
//! anything is placed, never makes a pool grow, never keeps a page from
//! going back, and reserved memory and fragmentation are the same as
//! without it. The freed slice's usage, statistics and arena chunks are
//! settled at the free as before (chunks released, acquired again at reuse:
//! no driver call while still mapped), so the slot holds no memory; reports
//! count the listed slice into the largest free block
//! ([`Core::largest_free`]).

use mem_storage::ComputeStorage;

use crate::core::Core;
use crate::free_index::class;
use crate::pool::Pool;
use crate::slots::NIL;

/// Largest slice kept listed: above it, a split and a coalesce are
/// negligible next to what the memory is used for.
pub(crate) const MAX_LISTED_BYTES: u64 = 64 << 20;

impl Core {
    /// The listed slice of carved `pool` if it has exactly `cap` bytes and
    /// the free index would have placed this reservation on it, unlisted,
    /// with its arena chunks acquired; else `None`, the slot flushed.
    pub(crate) fn take_listed<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        pool: u32,
        cap: u64,
        allocate: bool,
    ) -> Option<u32> {
        let slice = self.pool(pool).reuse?;
        let node = &self.slices[slice];
        let (prev, next, page, offset, size) =
            (node.prev, node.next, node.page, node.offset, node.size);
        let absorbed = if next != NIL && self.slices[next].indexed {
            next
        } else {
            NIL
        };
        let merged = size
            + if absorbed == NIL {
                0
            } else {
                self.slices[next].size
            };
        // The same capacity, or another one whose boundary with the free
        // neighbour after it can move (the split's remainder would not be
        // empty, and there is a neighbour to give or take the difference).
        let shape_fits = size == cap || (absorbed != NIL && merged > cap);
        let placed_here = shape_fits
            && (prev == NIL || !self.slices[prev].indexed)
            && self
                .pool(pool)
                .index
                .would_pick_merged(&self.slices, cap, merged, absorbed);
        if !placed_here {
            self.flush_listed(pool);
            return None;
        }
        if self.pages[page].chunks.is_some() {
            if self.lazy {
                self.claim_lazily(page, offset, cap);
            } else if self
                .acquire_chunks(storage, page, offset, cap, allocate)
                .is_err()
            {
                self.flush_listed(pool);
                return None;
            }
        }
        self.pool_mut(pool).reuse = None;
        self.slices[slice].listed = false;
        if absorbed != NIL {
            if size == cap {
                // The split's remainder would go in at the head of its bin.
                if self.slices[absorbed].free_prev != NIL {
                    self.index_remove(pool, absorbed);
                    self.index_insert(pool, absorbed);
                }
            } else {
                self.move_boundary(pool, slice, absorbed, cap);
            }
        }
        Some(slice)
    }

    /// Make `slice` `cap` bytes by moving its boundary with the indexed
    /// free slice `after` it, which keeps the rest: the layout a coalesce
    /// and a split at the same offset would leave, with `after` at the head
    /// of its bin as the split's remainder would be, and no node made or
    /// removed.
    fn move_boundary(&mut self, pool: u32, slice: u32, after: u32, cap: u64) {
        let node = &mut self.slices[slice];
        let (offset, size) = (node.offset, node.size);
        node.size = cap;
        let n = &self.slices[after];
        let (page, old_offset, old_size, head) = (n.page, n.offset, n.size, n.free_prev == NIL);
        let rest = old_size + size - cap;
        // Out of the index only if its bin changes or it is not the head.
        let reindex = !head || class(rest) != class(old_size);
        if reindex {
            self.index_remove(pool, after);
        }
        let n = &mut self.slices[after];
        n.offset = offset + cap;
        n.size = rest;
        if reindex {
            self.index_insert(pool, after);
        }
        if let Some(starts) = self.pages[page].starts.as_mut() {
            starts.remove(old_offset / self.alignment);
            starts.insert((offset + cap) / self.alignment, after);
        }
    }

    /// Keep a just-freed slice of carved `pool` listed instead of
    /// coalescing it; false (nothing done) when it is larger than
    /// [`MAX_LISTED_BYTES`]. The slot must be empty (flushed).
    pub(crate) fn list_freed(&mut self, pool: u32, slice: u32) -> bool {
        debug_assert!(self.pool(pool).reuse.is_none());
        if self.slices[slice].size > MAX_LISTED_BYTES {
            return false;
        }
        self.pool_mut(pool).reuse = Some(slice);
        self.slices[slice].listed = true;
        true
    }

    /// Coalesce `pool`'s listed slice into its free index, as its free would
    /// have. O(1).
    pub(crate) fn flush_listed(&mut self, pool: u32) {
        if let Some(slice) = self.pool_mut(pool).reuse.take() {
            self.slices[slice].listed = false;
            self.coalesce_into_index(pool, slice);
        }
    }

    /// [`Core::flush_listed`] for every pool.
    pub(crate) fn flush_all_listed(&mut self) {
        for pool in 0..self.pools.len() as u32 {
            self.flush_listed(pool);
        }
    }

    /// The largest free block of `pool` as if its listed slice were
    /// coalesced: the free index's largest, or the listed slice with its
    /// free neighbours.
    pub(crate) fn largest_free(&self, pool: &Pool) -> u64 {
        let best = pool.index.largest(&self.slices);
        let Some(slice) = pool.reuse else {
            return best;
        };
        let node = &self.slices[slice];
        let free = |s: u32| s != NIL && self.slices[s].indexed;
        let run = [node.prev, node.next]
            .into_iter()
            .filter(|&s| free(s))
            .map(|s| self.slices[s].size)
            .sum::<u64>()
            + node.size;
        best.max(run)
    }
}

#[cfg(test)]
#[path = "reuse_tests.rs"]
mod tests;
