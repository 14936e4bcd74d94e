//! Carving slices: reserve in a sliced or exclusive pool (find, split;
//! `pools/dispatch.rs` routes a reservation here by kind) and free
//! (coalesce).
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

/// What freeing a slice leaves for the engine once its pool uncounted it
/// ([`Pool::vacate`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vacated {
    pub(crate) page: u32,
    /// The slice's (offset, capacity) on its page.
    pub(crate) extent: (u64, u64),
    /// The slice's (prev, next) links, for [`Pool::coalesce`].
    pub(crate) neighbours: (u32, u32),
    /// Its page is outdated: released once empty, never coalesced into.
    pub(crate) outdated: bool,
    /// Its page holds no live or quarantined slice any more.
    pub(crate) empty: bool,
    /// Its page is an arena range: its chunks are released first.
    pub(crate) arena: bool,
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

    /// The pool's side of freeing live `slice`: uncount it on its page and
    /// in the pool. `None` when it is quarantined (never reused); else
    /// what the engine does next (`Core::free_slice`): an arena page's
    /// chunks, then an outdated page's release or [`Self::coalesce`].
    #[inline]
    pub(crate) fn vacate(&mut self, t: &mut Tables, slice: u32) -> Option<Vacated> {
        let node = &mut t.slices[slice];
        let (cap, size, page) = (node.size, node.requested, node.page);
        let (offset, prev, next) = (node.offset, node.prev, node.next);
        let (raw, pinned, quarantined) = (node.is_raw(), node.pins > 0, node.quarantined);
        node.owner = NIL;
        node.requested = 0;
        node.raw_out = false;
        node.raw_pins = 0;
        node.pins = 0;
        let info = &mut t.pages[page];
        info.live -= 1;
        info.live_bytes -= cap;
        let emptied = info.live == 0;
        info.raw_out -= u32::from(raw);
        info.pinned -= u32::from(pinned);
        let (outdated, empty, arena) = (
            info.outdated,
            info.live == 0 && info.quarantined == 0,
            info.chunks.is_some(),
        );
        if empty {
            info.idle_since = t.clock;
        }
        let usage = &mut self.usage;
        usage.live_pages -= u64::from(emptied);
        usage.slices -= 1;
        usage.bytes_in_use -= size;
        usage.bytes_padding -= cap - size;
        t.stats.on_free(cap, size);
        if quarantined {
            return None;
        }
        Some(Vacated {
            page,
            extent: (offset, cap),
            neighbours: (prev, next),
            outdated,
            empty,
            arena,
        })
    }

    /// Put freed `slice` back into the free index, merged with its free
    /// neighbours (`neighbours`: its links as [`Self::vacate`] read them)
    /// on a carved pool.
    #[inline]
    pub(crate) fn coalesce(&mut self, t: &mut Tables, slice: u32, (prev, next): (u32, u32)) {
        if !self.kind.is_carved() {
            return self.index.insert(&mut t.slices, slice);
        }
        // `slice` is live, so never indexed: only a free neighbour leaves
        // the index. (Its links, read above, are as they were: nothing
        // since changed them, and merging `next` in leaves `prev`.) The
        // merged slice takes the place in the index of a neighbour it
        // absorbed (`FreeIndex::replace`): `prev`'s when it absorbs both.
        let next_free = next != NIL && t.slices[next].indexed;
        let prev_free = prev != NIL && t.slices[prev].indexed;
        if prev_free {
            if next_free {
                self.index.remove(&mut t.slices, next);
                merge_into(t, slice, next, self.has_starts);
            }
            let prev_size = t.slices[prev].size;
            let merged = merge_into(t, prev, slice, self.has_starts);
            self.index
                .replace(&mut t.slices, (prev, prev_size), (prev, merged));
        } else if next_free {
            let (size, next_size) = (t.slices[slice].size, t.slices[next].size);
            let merged = (slice, size + next_size);
            self.index.replace(&mut t.slices, (next, next_size), merged);
            merge_into(t, slice, next, self.has_starts);
        } else {
            self.index.insert(&mut t.slices, slice);
        }
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

/// Absorb `right` into its left neighbour `left`, whose size it returns;
/// `right` is not indexed (the caller took it out, or `left` took its
/// place in the index). `has_starts`: the pool's [`Pool::has_starts`].
#[inline(always)]
fn merge_into(t: &mut Tables, left: u32, right: u32, has_starts: bool) -> u64 {
    debug_assert!(!t.slices[right].indexed);
    let node = &t.slices[right];
    let (size, next, page, offset) = (node.size, node.next, node.page, node.offset);
    let node = &mut t.slices[left];
    node.size += size;
    node.next = next;
    let merged = node.size;
    if next != NIL {
        t.slices[next].prev = left;
    }
    if has_starts {
        let unit = t.unit(offset);
        if let Some(starts) = t.pages[page].starts.as_mut() {
            starts.remove(unit);
        }
    }
    t.slices.remove(right);
    merged
}

#[cfg(test)]
#[path = "carve_tests.rs"]
mod tests;
