//! The release side of an arena page's chunks: a freed slice's slots go
//! idle, the pool's release threshold trims the oldest idle chunks whose
//! work is complete, teardown unmaps everything, and what is kept for
//! reuse is counted. The acquire side is `chunks.rs`, which explains the
//! whole mechanism.

use mem_storage::ComputeStorage;

use crate::config::PoolType;
use crate::pools::arena::state::{ArenaCtx, Arenas};
use crate::pools::paged::pool::Pool;
use crate::tables::chunk_map::NONE;
use crate::tables::floor::Tables;

impl Arenas {
    /// Uncount a freed slice at `offset..offset + bytes` of arena page
    /// `page`; slots it leaves untouched become idle, and beyond the pool's
    /// threshold (when `release`) the oldest idle chunks go back. Inlined:
    /// it is on every arena free, and the split of the free path between
    /// the pool and the arena must not add a call to it.
    #[inline]
    pub(crate) fn release_chunks<S: ComputeStorage>(
        &mut self,
        cx: ArenaCtx<'_, S>,
        page: u32,
        (offset, bytes): (u64, u64),
        release: bool,
    ) {
        // Taken apart, as on the reserve path (`place.rs`): the context is
        // built again only for the trims.
        let ArenaCtx { t, pools, storage } = cx;
        let Some(map) = t.chunk_map(page) else {
            return;
        };
        map.release_span(map.span(offset, bytes));
        let pool = &pools[t.pages[page].pool as usize];
        let threshold = match pool.kind {
            PoolType::VirtualArena {
                release_threshold, ..
            } => release_threshold,
            _ => 0,
        };
        // No threshold (the default): idle chunks wait for a cleanup.
        if release && threshold != u64::MAX {
            // The threshold is the pool's: its other ranges' idle chunks
            // count against it (O(ranges), one in practice).
            // So do its shed chunks kept unmapped, released first.
            let elsewhere = self.cached_chunk_bytes(t, pool) - self.cached_chunk_bytes_of(t, page);
            let keep = threshold.saturating_sub(elsewhere);
            let pool = t.pages[page].pool;
            let mut cx = ArenaCtx { t, pools, storage };
            let unmapped = self.trim_chunk_cache(&mut cx, pool, keep);
            self.trim_chunks(&mut cx, page, keep.saturating_sub(unmapped));
        }
    }

    /// Unmap and release idle chunks of `page` until at most `keep_bytes`
    /// of them stay mapped.
    pub(crate) fn trim_chunks<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
        keep_bytes: u64,
    ) {
        let Some(id) = cx.t.page_storage(page) else {
            return;
        };
        loop {
            let Some(map) = cx.t.chunk_map(page) else {
                return;
            };
            let g = map.granularity;
            if map.idle_count.saturating_mul(g) <= keep_bytes {
                return;
            }
            // Oldest first; a chunk still partly live is passed over.
            let Some((head, len)) = map.take_idle_extent(&NONE, false, usize::MAX) else {
                return;
            };
            if !self.unmap_extent(cx, page, id, head, len, false) {
                return;
            }
        }
    }

    /// Unmap and release every chunk of an empty arena page; `false` when
    /// one stays mapped (a refusal, or a slot still live).
    pub(crate) fn unmap_all_chunks<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
    ) -> bool {
        self.trim_chunks(cx, page, 0);
        cx.t.chunk_map(page).is_none_or(|map| map.mapped == 0)
    }

    /// Bytes of idle mapped chunks on `page`.
    pub(crate) fn cached_chunk_bytes_of(&self, t: &Tables, page: u32) -> u64 {
        t.pages[page]
            .chunks
            .as_deref()
            .map_or(0, |m| m.idle_count * m.granularity)
    }

    /// Bytes of idle mapped chunks on `pool`'s pages.
    pub(crate) fn cached_chunk_bytes(&self, t: &Tables, pool: &Pool) -> u64 {
        pool.current
            .iter()
            .filter_map(|&p| t.pages[p].chunks.as_deref())
            .map(|m| m.idle_count * m.granularity)
            .sum()
    }
}
