//! Moving chunks under arena slots: map a slot (an idle chunk moved from
//! its hole, or a new one), map a moved chunk back, unmap a slot, release a
//! chunk, and the share of idle chunks past which moving beats creating.
//! Every step leaves a slot mapped or unmapped, never half (see
//! `chunks.rs` for the policy and its guarantees).

use mem_storage::{ChunkId, ComputeStorage, StorageId};

use crate::arena::chunk_map::{NONE, Origin};
use crate::arena::chunks::IDLE_SHARE;
use crate::engine::core::Core;
use crate::error::IoError;

impl Core {
    /// Put a chunk under empty slot `s`: an idle one moved from its hole,
    /// else a new one; `true` when it is new. On a refusal nothing is left
    /// half done: a moved chunk whose map is refused is mapped back where
    /// it was, a new one is released.
    pub(crate) fn map_slot<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        page: u32,
        id: StorageId,
        s: u32,
        keep: &std::ops::RangeInclusive<u32>,
    ) -> Result<bool, IoError> {
        let pool = self.pages[page].pool;
        let map = self.arena_map(page);
        let g = map.granularity;
        let move_idle = self.idle_worth_moving();
        let map = self.arena_map(page);
        let idle_here = if move_idle {
            map.take_idle_to_move(keep)
        } else {
            None
        };
        let (chunk, from) = match idle_here {
            Some(from) => match storage.unmap_chunk(id, u64::from(from) * g) {
                Ok(chunk) => {
                    map.set_chunk(from, None);
                    map.mapped -= 1;
                    self.stats.chunks.unmaps += 1;
                    (chunk, Some((page, from)))
                }
                Err(err) => {
                    // Still mapped where it was: idle again.
                    map.requeue_oldest(from);
                    return Err(err.into());
                }
            },
            None => match move_idle
                .then(|| self.take_idle_elsewhere(storage, page, g))
                .flatten()
            {
                Some(moved) => {
                    let (chunk, from) = moved?;
                    (chunk, Some(from))
                }
                None => {
                    let chunk = storage.create_chunk()?;
                    self.stats.chunks.creates += 1;
                    self.on_chunk_bytes(pool, g, true);
                    (chunk, None)
                }
            },
        };
        let map = self.arena_map(page);
        match storage.map_chunk(id, u64::from(s) * g, chunk) {
            Ok(()) => {
                map.set_chunk(s, Some(chunk));
                map.mapped += 1;
                self.stats.chunks.maps += 1;
                Ok(from.is_none())
            }
            Err(err) => {
                let back = from
                    .is_some_and(|(home, slot)| self.map_back(storage, home, slot, chunk, pool, g));
                if !back {
                    tracing::debug!(%err, ?from, "mapping a chunk failed; it is released");
                    self.drop_chunk(storage, pool, chunk, g);
                }
                Err(err.into())
            }
        }
    }

    /// Whether a slot that needs a chunk takes an idle one out of its hole
    /// rather than a new one. Both cost two driver calls (unmap + map,
    /// create + map); moving keeps physical memory flat, creating keeps the
    /// hole's chunk for the next allocation that lands there (no call at
    /// all). Idle chunks move once they are at least 1/[`IDLE_SHARE`] of
    /// the mapped ones, so physical memory stays within about
    /// 1/([`IDLE_SHARE`] − 1) of the chunks live data touches (one more
    /// chunk at most) while holes keep their chunks below that share.
    pub(crate) fn idle_worth_moving(&self) -> bool {
        let (idle, mapped) = self
            .pools
            .iter()
            .flat_map(|p| &p.current)
            .filter_map(|&pg| self.pages[pg].chunks.as_deref())
            .fold((0, 0), |(i, m), map| (i + map.idle_count, m + map.mapped));
        idle > 0 && idle.saturating_mul(IDLE_SHARE) >= mapped
    }

    /// Map `chunk`, moved out of idle slot `slot` of `page` and counted in
    /// `pool` since, back there, idle again and counted in `page`'s pool;
    /// `false` when the device refuses.
    pub(crate) fn map_back<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        page: u32,
        slot: u32,
        chunk: ChunkId,
        pool: u32,
        g: u64,
    ) -> bool {
        let Some(id) = self.page_storage(page) else {
            return false;
        };
        if let Err(err) = storage.map_chunk(id, u64::from(slot) * g, chunk) {
            tracing::debug!(%err, "mapping a moved chunk back failed");
            return false;
        }
        self.stats.chunks.maps += 1;
        let home = self.pages[page].pool;
        let map = self.arena_map(page);
        map.set_chunk(slot, Some(chunk));
        map.mapped += 1;
        map.queue_idle(slot);
        if home != pool {
            self.pool_mut(pool).usage.bytes_reserved -= g;
            self.pool_mut(home).usage.bytes_reserved += g;
        }
        true
    }

    /// The oldest idle chunk of another arena page of this manager (any
    /// arena pool: chunks are the storage's, any range maps one), unmapped
    /// from its hole and counted in `page`'s pool, so physical memory grows
    /// only while no arena holds an idle chunk. `None` when none is idle; a
    /// refused unmap leaves the chunk idle where it was.
    pub(crate) fn take_idle_elsewhere<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        page: u32,
        g: u64,
    ) -> Option<Result<(ChunkId, Origin), IoError>> {
        let other = self
            .pools
            .iter()
            .flat_map(|p| &p.current)
            .copied()
            .find(|&pg| {
                pg != page
                    && self.pages[pg]
                        .chunks
                        .as_deref()
                        .is_some_and(|m| m.idle_count > 0 && m.granularity == g)
            })?;
        let (id, from_pool, to_pool) = (
            self.page_storage(other)?,
            self.pages[other].pool,
            self.pages[page].pool,
        );
        let map = self.chunk_map(other)?;
        let s = map.take_idle_to_move(&NONE)?;
        match storage.unmap_chunk(id, u64::from(s) * g) {
            Ok(chunk) => {
                map.set_chunk(s, None);
                map.mapped -= 1;
                self.stats.chunks.unmaps += 1;
                // The bytes move between pools; the manager's total stays.
                self.pool_mut(from_pool).usage.bytes_reserved -= g;
                let usage = &mut self.pool_mut(to_pool).usage;
                usage.bytes_reserved += g;
                usage.mark();
                Some(Ok((chunk, (other, s))))
            }
            Err(err) => {
                map.requeue_oldest(s);
                Some(Err(err.into()))
            }
        }
    }

    /// Unmap and release the chunk under slot `s` (no live slice touches
    /// it and it is not queued idle); `false` when the unmap is refused
    /// (the chunk stays mapped, idle).
    pub(crate) fn unmap_slot<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        page: u32,
        id: StorageId,
        s: u32,
    ) -> bool {
        let pool = self.pages[page].pool;
        let map = self.arena_map(page);
        let g = map.granularity;
        match storage.unmap_chunk(id, u64::from(s) * g) {
            Ok(chunk) => {
                map.set_chunk(s, None);
                map.mapped -= 1;
                self.stats.chunks.unmaps += 1;
                self.drop_chunk(storage, pool, chunk, g);
                true
            }
            Err(err) => {
                tracing::warn!(%err, slot = s, "unmapping a chunk failed; it stays mapped, idle");
                map.queue_idle(s);
                false
            }
        }
    }

    /// Release an unmapped chunk of `g` bytes (its bytes leave the pool).
    pub(crate) fn drop_chunk<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        pool: u32,
        chunk: ChunkId,
        g: u64,
    ) {
        match storage.release_chunk(chunk) {
            Ok(()) => self.stats.chunks.releases += 1,
            Err(err) => {
                // The storage still holds it (and counts its bytes): the
                // release is retried at the next flush.
                tracing::warn!(%err, %chunk, "chunk release refused; retried at the next flush");
                self.unreleased_chunks.push(chunk);
            }
        }
        self.on_chunk_bytes(pool, g, false);
    }

    /// Retry the releases of chunks the storage refused to release (see
    /// `drop_chunk`); those refused again stay for the next flush.
    pub(crate) fn retry_chunk_releases<S: ComputeStorage>(&mut self, storage: &mut S) {
        let mut refused = Vec::new();
        for chunk in std::mem::take(&mut self.unreleased_chunks) {
            match storage.release_chunk(chunk) {
                Ok(()) => self.stats.chunks.releases += 1,
                Err(err) => {
                    tracing::warn!(%err, %chunk, "chunk release refused again");
                    refused.push(chunk);
                }
            }
        }
        self.unreleased_chunks = refused;
    }

    /// Count `bytes` of mapped chunks in (or out of) `pool`'s reserved bytes.
    pub(crate) fn on_chunk_bytes(&mut self, pool: u32, bytes: u64, added: bool) {
        let usage = &mut self.pool_mut(pool).usage;
        if added {
            usage.bytes_reserved += bytes;
            usage.mark();
            self.stats.reserved_bytes.add(bytes);
        } else {
            usage.bytes_reserved -= bytes;
            self.stats.reserved_bytes.sub(bytes);
        }
    }
}
