//! Freeing a slice: its pool uncounts it (`vacate`), then, once the
//! engine released an arena page's chunks (`Core::free_slice`,
//! `pools/dispatch.rs`), it goes back into the free index merged with its
//! free neighbours (`coalesce`).
//!
//! Merging finds the neighbours through the slice's own links, so the
//! cost per free is flat in the number of live slices; the merged slice
//! takes the index place of a neighbour it absorbed in one step
//! (`FreeIndex::replace`), and nothing already read is read again.

use crate::pools::paged::pool::Pool;
use crate::tables::floor::Tables;
use crate::tables::slots::NIL;

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
    /// neighbours on a carved pool (`freed`: what [`Self::vacate`] read
    /// of it, so its node is not read again).
    #[inline]
    pub(crate) fn coalesce(&mut self, t: &mut Tables, slice: u32, freed: &Vacated) {
        if !self.kind.is_carved() {
            return self.index.insert(&mut t.slices, slice);
        }
        // `slice` is live, so never indexed: only a free neighbour leaves
        // the index. (Its links, read by `vacate`, are as they were:
        // nothing since changed them, and merging `next` in leaves
        // `prev`.) The merged slice takes the place in the index of a
        // neighbour it absorbed (`FreeIndex::replace`): `prev`'s when it
        // absorbs both.
        let ((prev, next), (offset, cap)) = (freed.neighbours, freed.extent);
        let after = match next {
            NIL => None,
            _ => Some(&t.slices[next])
                .filter(|n| n.indexed)
                .map(|n| (n.size, n.next)),
        };
        let before = match prev {
            NIL => None,
            _ => Some(&t.slices[prev]).filter(|n| n.indexed).map(|n| n.size),
        };
        let mut this = Absorbed {
            node: slice,
            size: cap,
            next,
            page: freed.page,
            offset,
        };
        let next_of = |(size, after)| Absorbed {
            node: next,
            size,
            next: after,
            page: freed.page,
            offset: offset + cap,
        };
        let starts = self.has_starts;
        match (before, after) {
            (Some(prev_size), after) => {
                if let Some(n) = after {
                    self.index.remove(&mut t.slices, next);
                    this.size = merge_into(t, slice, next_of(n), starts);
                    this.next = n.1;
                }
                let merged = merge_into(t, prev, this, starts);
                self.index
                    .replace(&mut t.slices, (prev, prev_size), (prev, merged));
            }
            (None, Some(n)) => {
                let merged = (slice, cap + n.0);
                self.index.replace(&mut t.slices, (next, n.0), merged);
                merge_into(t, slice, next_of(n), starts);
            }
            (None, None) => self.index.insert(&mut t.slices, slice),
        }
    }
}

/// A slice that [`merge_into`] absorbs: its node and what the caller
/// already knows of it (its size, next link, page and offset), so it is
/// not read again.
struct Absorbed {
    node: u32,
    size: u64,
    next: u32,
    page: u32,
    offset: u64,
}

/// Absorb `right` into its left neighbour `left`, whose size it returns;
/// `right` is not indexed (the caller took it out, or `left` took its
/// place in the index). `has_starts`: the pool's [`Pool::has_starts`].
#[inline(always)]
fn merge_into(t: &mut Tables, left: u32, right: Absorbed, has_starts: bool) -> u64 {
    debug_assert!(!t.slices[right.node].indexed);
    let node = &mut t.slices[left];
    node.size += right.size;
    node.next = right.next;
    let merged = node.size;
    if right.next != NIL {
        t.slices[right.next].prev = left;
    }
    if has_starts {
        let unit = t.unit(right.offset);
        if let Some(starts) = t.pages[right.page].starts.as_mut() {
            starts.remove(unit);
        }
    }
    t.slices.remove(right.node);
    merged
}
