//! Re-claiming a known extent: take back exactly the free bytes a view
//! names, as a pin handle.
//!
//! A graph pool that lends its temporaries to a later capture (mem-capture's
//! sharing) must pin each lent slice back if the window did not reuse it.
//! Reserving until the pool happens to hand out the right slice is bounded
//! guesswork; this is the exact call. The view names its page by storage id
//! (a hash lookup, O(1)) and the extent by offset: on a persistent or
//! exclusive page — one slice each — that is the page's only slice, O(1);
//! on a sliced page the page's slice-start index (`starts.rs`) names the
//! slice holding the offset, O(1).
//!
//! That index is built on a page's first extent lookup
//! ([`Pool::index_starts`], one walk over the page's slices) and kept by
//! split and coalesce from then on. Built with the page, it would cost
//! every split an insert and every coalesce a remove on pages no extent
//! is ever claimed from — nearly all of them: only a capture's extents
//! are.
//! `capture_end` and `reclaim_extent` (`engine/reclaim.rs`) use this
//! carving (`Core::carve_extent`, `pools/dispatch.rs`, which checks an
//! arena extent's chunks in between) for extents freed inside a window.

use crate::error::IoError;
use crate::pools::paged::pool::Pool;
use crate::tables::floor::Tables;
use crate::tables::slots::NIL;
use crate::tables::starts::SliceStarts;

/// The free slice holding an extent, and its offset on the page.
pub(crate) type ExtentSlice = (u32, u64);

impl Pool {
    /// Give carved `page` its slice-start index if it has none yet: one
    /// walk over its slices in address order. An uncarved page needs none
    /// (its one slice is its head).
    pub(crate) fn index_starts(&mut self, t: &mut Tables, page: u32) {
        let Some(info) = t.pages.get(page) else {
            return;
        };
        if !self.kind.is_carved() || info.starts.is_some() {
            return;
        }
        let mut starts = SliceStarts::new(info.size / t.alignment, info.head);
        let mut node = t.slices[info.head].next;
        while node != NIL {
            starts.insert(t.unit(t.slices[node].offset), node);
            node = t.slices[node].next;
        }
        t.pages[page].starts = Some(starts);
        self.has_starts = true;
    }

    /// The free slice of this pool's `page` that holds all of
    /// `offset..offset + cap` and can be cut to exactly it; `None` when
    /// the range is (partly) live, quarantined, or not cuttable (an
    /// uncarved page's one slice must match it exactly). Changes nothing;
    /// a carved page's start index must exist ([`Self::index_starts`]).
    pub(crate) fn extent_slice(
        &self,
        t: &Tables,
        page: u32,
        offset: u64,
        cap: u64,
    ) -> Option<ExtentSlice> {
        let info = t.pages.get(page)?;
        if !offset.is_multiple_of(t.alignment) {
            return None;
        }
        let sliced = self.kind.is_carved();
        let node = match &info.starts {
            Some(starts) => starts.holding(t.unit(offset)),
            None => Some(info.head),
        }?;
        let n = &t.slices[node];
        if n.page != page || offset < n.offset || offset >= n.offset + n.size.max(1) {
            return None;
        }
        let fits = n.is_free() && !n.quarantined && offset + cap <= n.offset + n.size;
        let exact = n.offset == offset && n.size == cap;
        if !fits || !(exact || (sliced && n.indexed)) {
            return None;
        }
        Some((node, n.offset))
    }

    /// Cut `offset..offset + cap` out of the free slice
    /// [`Self::extent_slice`] found and occupy it for `owner`; the pieces
    /// before and after stay free. Returns the claimed slice.
    pub(crate) fn take_extent(
        &mut self,
        t: &mut Tables,
        (mut node, n_offset): ExtentSlice,
        (offset, cap): (u64, u64),
        (requested, owner): (u64, u32),
    ) -> Result<u32, IoError> {
        if n_offset < offset {
            let front = offset - n_offset;
            self.split(t, node, front)?;
            // `split` leaves the piece it cut unindexed for its caller to
            // occupy; the front piece stays free, so it goes back.
            self.index.insert(&mut t.slices, node);
            node = t.slices[node].next;
        }
        if t.slices[node].size > cap {
            self.split(t, node, cap)?;
        }
        self.index.remove(&mut t.slices, node);
        self.occupy(t, node, requested, owner);
        Ok(node)
    }
}
