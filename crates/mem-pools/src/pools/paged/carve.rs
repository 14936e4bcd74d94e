//! Carving slices: reserve in a sliced or exclusive pool (find, split;
//! `pools/dispatch.rs` routes a reservation here by kind). Freeing them
//! (uncount, coalesce) is `vacate.rs`.
//!
//! Finding is one free-index lookup; splitting inserts one node after the
//! chosen slice; freeing merges with at most two neighbours found through the
//! slice's own links. No step walks a page or a pool, so the cost per
//! reservation is flat in the number of live slices.

use mem_storage::ComputeStorage;

use crate::error::IoError;
use crate::pools::paged::pool::Pool;
use crate::tables::floor::Tables;
use crate::tables::nodes::SliceNode;
use crate::tables::slots::NIL;

/// What a reservation may do beyond reusing free slices.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Allowance {
    /// Allocate new storage pages (false inside a capture window).
    pub(crate) allocate: bool,
    /// Release pages that empty (false during a capture).
    pub(crate) release: bool,
}

impl Pool {
    /// A sliced pool's reservation of `cap` (aligned) bytes for slot
    /// `owner` (`pool` is its routing position): grow the page size if
    /// `cap` exceeds it, find a free slice (else a new page of the pool's
    /// page size), split the rest off.
    #[inline]
    pub(crate) fn reserve_sliced<S: ComputeStorage>(
        &mut self,
        t: &mut Tables,
        storage: &mut S,
        pool: u32,
        (cap, size): (u64, u64),
        owner: u32,
        allow: Allowance,
    ) -> Result<u32, IoError> {
        within_page_limit(t, cap, size)?;
        if cap > self.page_size {
            self.grow(t, storage, pool, cap, size, allow)?;
        }
        let found = self.index.find(&t.slices, cap);
        let (sizes, allocate) = ((pool, self.page_size), (size, allow.allocate));
        let slice = self.found_or_new_page(t, storage, found, sizes, allocate)?;
        self.take_front(t, slice, cap)?;
        self.occupy(t, slice, size, owner);
        Ok(slice)
    }

    /// An exclusive pool's reservation (the persistent pool's too): a free
    /// page it fits within a factor of two, else a page of exactly `cap`.
    #[inline]
    pub(crate) fn reserve_exclusive<S: ComputeStorage>(
        &mut self,
        t: &mut Tables,
        storage: &mut S,
        pool: u32,
        (cap, size): (u64, u64),
        owner: u32,
        may_allocate: bool,
    ) -> Result<u32, IoError> {
        within_page_limit(t, cap, size)?;
        // The persistent pool too: its exact-fit index finds only a free
        // page of exactly `cap`, which the filter keeps.
        let found = (self.index.find(&t.slices, cap)).filter(|&s| t.slices[s].size / 2 <= cap);
        let allocate = (size, may_allocate);
        let slice = self.found_or_new_page(t, storage, found, (pool, cap), allocate)?;
        self.index.remove(&mut t.slices, slice);
        self.occupy(t, slice, size, owner);
        Ok(slice)
    }

    /// Take free, indexed `slice` (of a carved pool) for `cap` bytes: split
    /// the rest off when it is larger, else take it out of the index.
    #[inline(always)]
    pub(crate) fn take_front(
        &mut self,
        t: &mut Tables,
        slice: u32,
        cap: u64,
    ) -> Result<(), IoError> {
        let size = t.slices[slice].size;
        if size > cap {
            // The rest takes `slice`'s place in the index.
            let rest = self.cut(t, slice, cap)?;
            self.index
                .replace(&mut t.slices, (slice, size), (rest, size - cap));
        } else {
            self.index.remove(&mut t.slices, slice);
        }
        Ok(())
    }
    /// Cut `slice` (free, indexed) to `cap` bytes; the rest becomes a free
    /// slice right after it, indexed in `slice`'s place.
    #[inline]
    pub(crate) fn split(&mut self, t: &mut Tables, slice: u32, cap: u64) -> Result<(), IoError> {
        let size = t.slices[slice].size;
        let rest = self.cut(t, slice, cap)?;
        self.index
            .replace(&mut t.slices, (slice, size), (rest, size - cap));
        Ok(())
    }
    /// Cut the last `cap` bytes of free, indexed `slice` off as a new free
    /// slice (not indexed, for the caller to occupy); the front stays
    /// indexed at its new size.
    pub(crate) fn split_tail(
        &mut self,
        t: &mut Tables,
        slice: u32,
        cap: u64,
    ) -> Result<u32, IoError> {
        let size = t.slices[slice].size;
        let front = size - cap;
        let tail = self.cut(t, slice, front)?;
        self.index
            .replace(&mut t.slices, (slice, size), (slice, front));
        Ok(tail)
    }
    /// Cut free `slice` after its first `at` bytes: it keeps them, and a
    /// new free slice right after it (linked, in the start map) takes the
    /// rest. The index is the caller's: `slice` is still in it at its old
    /// size, the new slice is not (`split`, `split_tail` re-index them in
    /// one step, `FreeIndex::replace`). On an error (no node index left)
    /// nothing changed. Returns the new slice.
    #[inline(always)]
    pub(crate) fn cut(&mut self, t: &mut Tables, slice: u32, at: u64) -> Result<u32, IoError> {
        let node = &t.slices[slice];
        let (page, next, start) = (node.page, node.next, node.offset + at);
        let rest = SliceNode {
            prev: slice,
            next,
            ..SliceNode::free(page, start, node.size - at)
        };
        let rest = t.slices.insert(rest)?;
        let node = &mut t.slices[slice];
        node.size = at;
        node.next = rest;
        if next != NIL {
            t.slices[next].prev = rest;
        }
        if self.has_starts {
            let unit = t.unit(start);
            if let Some(starts) = t.pages[page].starts.as_mut() {
                starts.insert(unit, rest);
            }
        }
        Ok(rest)
    }
    /// Mark a free, unindexed slice live for `owner` and count it.
    pub(crate) fn occupy(&mut self, t: &mut Tables, slice: u32, size: u64, owner: u32) {
        let node = &mut t.slices[slice];
        node.owner = owner;
        node.requested = size;
        node.cursor_set = false;
        let (cap, page) = (node.size, node.page);
        let info = &mut t.pages[page];
        info.live += 1;
        info.live_bytes += cap;
        let first = info.live == 1;
        let usage = &mut self.usage;
        usage.live_pages += u64::from(first);
        usage.slices += 1;
        usage.bytes_in_use += size;
        usage.bytes_padding += cap - size;
        usage.largest_alloc = usage.largest_alloc.max(size);
        usage.mark_in_use();
        t.stats.on_reserve(cap, size);
    }
}

/// No page is ever larger than the device's largest page: a persistent
/// or exclusive request gets a dedicated page of exactly its aligned
/// size up to that limit, and above it can never be served (the device
/// refuses one buffer that large), so it is typed here rather than sent
/// to the device as a retryable out-of-memory. (An arena's limit is its
/// range, not a page: `Pool::max_size` routed the size there already.)
#[inline]
pub(crate) fn within_page_limit(t: &Tables, cap: u64, size: u64) -> Result<(), IoError> {
    if cap > t.max_page {
        return Err(IoError::BufferTooBig {
            size,
            max: t.max_page,
        });
    }
    Ok(())
}

#[cfg(test)]
#[path = "carve_tests.rs"]
mod tests;
