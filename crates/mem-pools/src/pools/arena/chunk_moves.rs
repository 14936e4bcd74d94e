//! Driver calls under arena slots: unmap a chunk whole, keep it for reuse
//! or release it, undo a refused acquire, and count the bytes. Every step
//! leaves a slot mapped or unmapped, never half (see `chunks.rs` for the
//! policy and its guarantees, `shed.rs` for when idle chunks are shed and
//! `run_cover.rs` for how a run is mapped).
//!
//! Why sized chunks and no moves: a chunk is one `cuMemCreate` and one
//! `cuMemMap` however large, so a run of k empty slots costs two calls,
//! not 2k. A chunk of k slots can only be unmapped whole, so an idle
//! chunk is not moved slot by slot into a hole (unmap + map per slot):
//! it is shed whole and kept for reuse (`chunk_cache.rs`), and the next
//! run maps it before it creates.

use mem_storage::{ChunkId, ComputeStorage, StorageId};

use crate::pools::arena::state::{ArenaCtx, Arenas};
use crate::pools::paged::pool::Pool;
use crate::tables::floor::Tables;

impl Arenas {
    /// Unmap and release every chunk over the `len` mapped slots from
    /// `first` of `page` and the chunks' slots past them (a refused
    /// acquire's undo).
    pub(crate) fn unmap_slots<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
        id: StorageId,
        (first, len): (u32, u32),
    ) {
        let mut s = first;
        while s < first + len {
            let map = cx.t.arena_map(page);
            let (head, slots) = map.extent(s);
            // A cached chunk mapped past its run queued its extra slots idle.
            for slot in head..head + slots {
                if map.is_idle(slot) {
                    map.unqueue(slot);
                }
            }
            self.unmap_extent(cx, page, id, head, slots, false);
            s = head + slots;
        }
    }

    /// Unmap the chunk at slot `head` covering `len` slots (no live slice
    /// touches it and none of its slots is queued idle), then keep it for
    /// reuse (`keep`: `chunk_cache.rs`) or release it; `false` when the
    /// unmap is refused (the chunk stays mapped, idle).
    pub(crate) fn unmap_extent<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
        id: StorageId,
        head: u32,
        len: u32,
        keep: bool,
    ) -> bool {
        let pool = cx.t.pages[page].pool;
        let map = cx.t.arena_map(page);
        let g = map.granularity;
        match cx.storage.unmap_chunk(id, u64::from(head) * g) {
            Ok(chunk) => {
                map.set_extent(head, len, None);
                cx.t.stats.chunks.unmaps += 1;
                if keep {
                    self.cache_chunk(cx, pool, chunk, u64::from(len) * g);
                } else {
                    self.drop_chunk(cx, pool, chunk, u64::from(len) * g);
                }
                true
            }
            Err(err) => {
                tracing::warn!(%err, slot = head, "unmapping a chunk failed; it stays mapped, idle");
                for s in head..head + len {
                    map.queue_idle(s);
                }
                false
            }
        }
    }

    /// Release an unmapped chunk of `bytes` (its bytes leave the pool).
    pub(crate) fn drop_chunk<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        pool: u32,
        chunk: ChunkId,
        bytes: u64,
    ) {
        match cx.storage.release_chunk(chunk) {
            Ok(()) => cx.t.stats.chunks.releases += 1,
            Err(err) => {
                // The cx.storage still holds it (and counts its bytes): the
                // release is retried at the next flush.
                tracing::warn!(%err, %chunk, "chunk release refused; retried at the next flush");
                self.unreleased_chunks.push(chunk);
            }
        }
        self.on_chunk_bytes(cx.t, cx.pools, pool, bytes, false);
    }

    /// Retry the releases of chunks the storage refused to release (see
    /// `drop_chunk`); those refused again stay for the next flush.
    pub(crate) fn retry_chunk_releases<S: ComputeStorage>(
        &mut self,
        t: &mut Tables,
        storage: &mut S,
    ) {
        let mut refused = Vec::new();
        for chunk in std::mem::take(&mut self.unreleased_chunks) {
            match storage.release_chunk(chunk) {
                Ok(()) => t.stats.chunks.releases += 1,
                Err(err) => {
                    tracing::warn!(%err, %chunk, "chunk release refused again");
                    refused.push(chunk);
                }
            }
        }
        self.unreleased_chunks = refused;
    }

    /// Count `bytes` of mapped chunks in (or out of) `pool`'s reserved bytes.
    pub(crate) fn on_chunk_bytes(
        &mut self,
        t: &mut Tables,
        pools: &mut [Pool],
        pool: u32,
        bytes: u64,
        added: bool,
    ) {
        let usage = &mut pools[pool as usize].usage;
        if added {
            usage.bytes_reserved += bytes;
            usage.mark();
            t.stats.reserved_bytes.add(bytes);
        } else {
            usage.bytes_reserved -= bytes;
            t.stats.reserved_bytes.sub(bytes);
        }
    }
}
