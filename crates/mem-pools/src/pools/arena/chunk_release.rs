//! The release side of an arena page's chunks: a freed slice's slots go
//! idle, the pool's release threshold trims the oldest idle chunks whose
//! work is complete, teardown unmaps everything, and what is kept for
//! reuse is counted. The acquire side is `chunks.rs`, which explains the
//! whole mechanism.

use mem_storage::ComputeStorage;

use crate::config::PoolType;
use crate::pools::core::Core;
use crate::tables::chunk_map::NONE;

impl Core {
    /// Uncount a freed slice at `offset..offset + bytes` of arena page
    /// `page`; slots it leaves untouched become idle, and beyond the pool's
    /// threshold (when `release`) the oldest idle chunks go back.
    pub(crate) fn release_chunks<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        page: u32,
        offset: u64,
        bytes: u64,
        release: bool,
    ) {
        let Some(map) = self.chunk_map(page) else {
            return;
        };
        map.release_span(map.span(offset, bytes));
        let pool = self.pool(self.tables.pages[page].pool);
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
            let elsewhere = self.cached_chunk_bytes(pool) - self.cached_chunk_bytes_of(page);
            let keep = threshold.saturating_sub(elsewhere);
            let pool = self.tables.pages[page].pool;
            let unmapped = self.trim_chunk_cache(storage, pool, keep);
            self.trim_chunks(storage, page, keep.saturating_sub(unmapped));
        }
    }

    /// Unmap and release idle chunks of `page` until at most `keep_bytes`
    /// of them stay mapped.
    pub(crate) fn trim_chunks<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        page: u32,
        keep_bytes: u64,
    ) {
        let Some(id) = self.page_storage(page) else {
            return;
        };
        loop {
            let Some(map) = self.chunk_map(page) else {
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
            if !self.unmap_extent(storage, page, id, head, len, false) {
                return;
            }
        }
    }

    /// Unmap and release every chunk of an empty arena page; `false` when
    /// one stays mapped (a refusal, or a slot still live).
    pub(crate) fn unmap_all_chunks<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        page: u32,
    ) -> bool {
        self.trim_chunks(storage, page, 0);
        self.chunk_map(page).is_none_or(|map| map.mapped == 0)
    }

    /// Bytes of idle mapped chunks on `page`.
    pub(crate) fn cached_chunk_bytes_of(&self, page: u32) -> u64 {
        self.tables.pages[page]
            .chunks
            .as_deref()
            .map_or(0, |m| m.idle_count * m.granularity)
    }

    /// Bytes of idle mapped chunks on `pool`'s pages.
    pub(crate) fn cached_chunk_bytes(&self, pool: &crate::pools::paged::pool::Pool) -> u64 {
        pool.current
            .iter()
            .filter_map(|&p| self.tables.pages[p].chunks.as_deref())
            .map(|m| m.idle_count * m.granularity)
            .sum()
    }
}
