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
//! `capture_end` and `reclaim_extent` (`engine/reclaim.rs`) use this
//! carving (`Core::carve_extent`) for extents freed inside a window.

use crate::error::IoError;
use crate::pools::core::Core;

impl Core {
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
        let Some(info) = self.tables.pages.get(page) else {
            return Ok(None);
        };
        if !offset.is_multiple_of(self.tables.alignment) {
            return Ok(None);
        }
        let sliced = self.pool(info.pool).kind.is_carved();
        let node = match &info.starts {
            Some(starts) => starts.holding(self.tables.unit(offset)),
            None => Some(info.head),
        };
        let Some(mut node) = node else {
            return Ok(None);
        };
        let n = &self.tables.slices[node];
        if n.page != page || offset < n.offset || offset >= n.offset + n.size.max(1) {
            return Ok(None);
        }
        let fits = n.is_free() && !n.quarantined && offset + cap <= n.offset + n.size;
        let exact = n.offset == offset && n.size == cap;
        let n_offset = n.offset;
        if !fits || !(exact || (sliced && n.indexed)) {
            return Ok(None);
        }
        // An arena extent is re-claimed only where its chunks are still
        // mapped (a capture window maps nothing).
        if !self
            .arenas
            .claim_mapped_chunks(&mut self.tables, page, offset, cap)
        {
            return Ok(None);
        }
        let (p, t) = self.pool_parts(self.tables.pages[page].pool);
        if n_offset < offset {
            let front = offset - n_offset;
            p.split(t, node, front)?;
            // `split` leaves the piece it cut unindexed for its caller to
            // occupy; the front piece stays free, so it goes back.
            p.index.insert(&mut t.slices, node);
            node = t.slices[node].next;
        }
        if t.slices[node].size > cap {
            p.split(t, node, cap)?;
        }
        p.index.remove(&mut t.slices, node);
        p.occupy(t, node, requested, owner);
        Ok(Some(node))
    }
}
