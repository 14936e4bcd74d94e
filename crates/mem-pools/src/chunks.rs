//! Physical chunks under an arena page: mapped where live slices are.
//!
//! An arena page is a virtual range carved exactly like a sliced page; this
//! module decides where physical memory sits under it. Every granule of the
//! range (a *chunk slot*) counts the live slices that overlap it:
//! - **acquire** (a slice is about to go live): every slot it touches gets a
//!   chunk. A slot already mapped costs nothing. Otherwise, once idle
//!   chunks (mapped, touched by no live slice) are at least 1/[`IDLE_SHARE`]
//!   of the mapped ones, an idle chunk is unmapped from its hole — in this
//!   range, else in any other arena range of the manager, whatever its
//!   pool — and mapped here; below that share a new chunk is created and
//!   the holes keep theirs, so an allocation landing there again costs no
//!   driver call. Physical memory therefore stays within about
//!   1/([`IDLE_SHARE`] − 1) of the chunks live slices touch (plus one), at
//!   its peak too, whatever the caches hold.
//! - **release** (a slice was freed): slots no live slice touches any more
//!   become idle — still mapped, so an allocation landing there again costs
//!   no driver call — up to the pool's release threshold (all its ranges
//!   together); beyond it the oldest idle chunks of the range are unmapped
//!   and released.
//!
//! All of it is O(chunks the slice touches), plus O(arena ranges) for a
//! chunk taken from another range and for the threshold of a pool with
//! several ranges (one range each in practice); the idle queue is FIFO with
//! lazy deletion (an entry whose slot went live again is skipped when met).
//! A failed driver call leaves every slot either mapped (live or idle) or
//! unmapped, never half, and a refused acquire leaves physical memory,
//! reserved bytes and the cache as they were: acquire maps before it
//! counts; on a refusal the chunks it created go back to the device, the
//! idle chunks it moved stay where they now are, idle, and a moved chunk
//! whose map is refused is mapped back where it was. Only when the device
//! refuses that undo too does a chunk stay behind, idle, for the threshold
//! to trim later. A chunk whose release is refused stays with the storage
//! and its release is retried at the engine's next flush.

use std::collections::VecDeque;

use mem_storage::{ChunkId, ComputeStorage, StorageId};

use crate::core::Core;
use crate::error::IoError;
use crate::pool::PoolKind;

/// Idle chunks are moved to where a slot needs one once they are at least
/// this fraction (1/16) of an arena manager's mapped chunks; below it a new
/// chunk is created and holes keep theirs (see `idle_worth_moving`).
pub const IDLE_SHARE: u64 = 16;

/// A span that holds no slot (`take_idle` keeps nothing back).
#[allow(clippy::reversed_empty_ranges)]
const NONE: std::ops::RangeInclusive<u32> = 1..=0;

/// Where a moved chunk was mapped: (arena page, slot).
type Origin = (u32, u32);

/// One granule of an arena page.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// Live slices overlapping it.
    live: u32,
    chunk: Option<ChunkId>,
    /// Mapped, touched by no live slice, and queued in `idle`.
    idle: bool,
    /// Scratch flag of `compact_idle` (false outside it).
    kept: bool,
}

/// The chunk slots of one arena page.
#[derive(Debug, Clone)]
pub(crate) struct ChunkMap {
    pub(crate) granularity: u64,
    /// Grown to the highest slot touched (ranges are carved from the low end).
    slots: Vec<Slot>,
    idle: VecDeque<u32>,
    pub(crate) idle_count: u64,
    pub(crate) mapped: u64,
}

impl ChunkMap {
    pub(crate) fn new(granularity: u64) -> Self {
        Self {
            granularity,
            slots: Vec::new(),
            idle: VecDeque::new(),
            idle_count: 0,
            mapped: 0,
        }
    }

    /// Slots `offset..offset + bytes` touches (none for an empty slice).
    fn span(&self, offset: u64, bytes: u64) -> std::ops::RangeInclusive<u32> {
        if bytes == 0 {
            return NONE;
        }
        let g = self.granularity;
        let first = offset / g;
        let last = (offset + bytes - 1) / g;
        (first as u32)..=(last as u32)
    }

    fn slot(&mut self, s: u32) -> &mut Slot {
        if s as usize >= self.slots.len() {
            self.slots.resize(s as usize + 1, Slot::default());
        }
        &mut self.slots[s as usize]
    }

    /// Mark mapped slot `s`, touched by no live slice, idle (newest).
    fn queue_idle(&mut self, s: u32) {
        let slot = self.slot(s);
        debug_assert!(slot.chunk.is_some() && slot.live == 0 && !slot.idle);
        slot.idle = true;
        self.idle.push_back(s);
        self.idle_count += 1;
        self.compact_idle();
    }

    /// Count one more live slice on mapped slot `s` (no longer idle; its
    /// queue entry goes stale).
    fn claim_slot(&mut self, s: u32) {
        let slot = self.slot(s);
        slot.live += 1;
        if slot.idle {
            slot.idle = false;
            self.idle_count -= 1;
        }
    }

    /// One live slice less on slot `s`; idle when none is left.
    fn release_slot(&mut self, s: u32) {
        let slot = self.slot(s);
        slot.live -= 1;
        if slot.live == 0 && slot.chunk.is_some() {
            self.queue_idle(s);
        }
    }

    /// Drop the queue's stale entries (slots that went live again, and the
    /// older entries of slots queued again) once they outnumber the idle
    /// slots, keeping the rest in order. Without it a slot reused in place
    /// (an allocation landing on cached chunks, the steady state) leaves an
    /// entry behind at each free and the queue grows without bound; with it
    /// the queue stays O(idle slots), and as a compaction follows at least
    /// 64 pushes it costs O(1) per push, amortized.
    fn compact_idle(&mut self) {
        if self.idle.len() <= 2 * self.idle_count as usize + 64 {
            return;
        }
        let mut kept = VecDeque::with_capacity(self.idle_count as usize);
        for &s in self.idle.iter().rev() {
            let slot = &mut self.slots[s as usize];
            if slot.idle && !slot.kept {
                slot.kept = true;
                kept.push_front(s);
            }
        }
        for &s in &kept {
            self.slots[s as usize].kept = false;
        }
        self.idle = kept;
    }

    /// The oldest idle slot outside `keep`, taken off the idle queue.
    fn take_idle(&mut self, keep: &std::ops::RangeInclusive<u32>) -> Option<u32> {
        let mut skipped = Vec::new();
        let found = loop {
            let Some(s) = self.idle.pop_front() else {
                break None;
            };
            let slot = self.slots[s as usize];
            if !slot.idle {
                continue; // went live again: a stale entry
            }
            if keep.contains(&s) {
                skipped.push(s);
                continue;
            }
            break Some(s);
        };
        for s in skipped.into_iter().rev() {
            self.idle.push_front(s);
        }
        if let Some(s) = found {
            self.slots[s as usize].idle = false;
            self.idle_count -= 1;
        }
        found
    }
}

impl Core {
    fn chunk_map(&mut self, page: u32) -> Option<&mut ChunkMap> {
        self.pages[page].chunks.as_deref_mut()
    }

    fn page_storage(&self, page: u32) -> Option<StorageId> {
        self.pages[page].storage.map(|h| h.id)
    }

    /// Map chunks under every slot of `offset..offset + bytes` of arena
    /// page `page`, then count the slice on them. Without `may_map` (a
    /// capture window) only slots already mapped are accepted.
    pub(crate) fn acquire_chunks<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        page: u32,
        offset: u64,
        bytes: u64,
        may_map: bool,
    ) -> Result<(), IoError> {
        let (Some(id), Some(map)) = (self.page_storage(page), self.chunk_map(page)) else {
            return Ok(());
        };
        let span = map.span(offset, bytes);
        let g = map.granularity;
        let mut mapped_here = Vec::new();
        for s in span.clone() {
            let map = self.pages[page]
                .chunks
                .as_deref_mut()
                .expect("an arena page");
            if map.slot(s).chunk.is_some() {
                continue;
            }
            let result = match may_map {
                true => self.map_slot(storage, page, id, s, &span),
                false => Err(IoError::CaptureWouldAllocate {
                    size: bytes,
                    page_size: g,
                }),
            };
            match result {
                Ok(created) => mapped_here.push((s, created)),
                Err(err) => {
                    // Undo what this call mapped: a chunk it created goes
                    // back to the device; one it moved from a hole stays
                    // here, idle. Physical memory, reserved bytes and the
                    // cache are as they were (unless the device refuses
                    // the undo too: the chunk then stays idle).
                    for (s, created) in mapped_here {
                        if created {
                            self.unmap_slot(storage, page, id, s);
                        } else {
                            self.chunk_map(page).expect("an arena page").queue_idle(s);
                        }
                    }
                    return Err(err);
                }
            }
        }
        self.claim_mapped_chunks(page, offset, bytes);
        Ok(())
    }

    /// Count a slice at `offset..offset + bytes` on the chunks of arena
    /// page `page` if every slot it touches is mapped (no driver call);
    /// `false`, changing nothing, when one is not. Non-arena pages: `true`.
    pub(crate) fn claim_mapped_chunks(&mut self, page: u32, offset: u64, bytes: u64) -> bool {
        let Some(map) = self.chunk_map(page) else {
            return true;
        };
        let span = map.span(offset, bytes);
        if span.clone().any(|s| map.slot(s).chunk.is_none()) {
            return false;
        }
        for s in span {
            map.claim_slot(s);
        }
        true
    }

    /// Put a chunk under empty slot `s`: an idle one moved from its hole,
    /// else a new one; `true` when it is new. On a refusal nothing is left
    /// half done: a moved chunk whose map is refused is mapped back where
    /// it was, a new one is released.
    fn map_slot<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        page: u32,
        id: StorageId,
        s: u32,
        keep: &std::ops::RangeInclusive<u32>,
    ) -> Result<bool, IoError> {
        let pool = self.pages[page].pool;
        let map = self.pages[page]
            .chunks
            .as_deref_mut()
            .expect("an arena page");
        let g = map.granularity;
        let move_idle = self.idle_worth_moving();
        let map = self.pages[page]
            .chunks
            .as_deref_mut()
            .expect("an arena page");
        let idle_here = if move_idle { map.take_idle(keep) } else { None };
        let (chunk, from) = match idle_here {
            Some(from) => match storage.unmap_chunk(id, u64::from(from) * g) {
                Ok(chunk) => {
                    map.slots[from as usize].chunk = None;
                    map.mapped -= 1;
                    self.stats.chunks.unmaps += 1;
                    (chunk, Some((page, from)))
                }
                Err(err) => {
                    // Still mapped where it was: idle again.
                    map.slots[from as usize].idle = true;
                    map.idle.push_front(from);
                    map.idle_count += 1;
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
        let map = self.pages[page]
            .chunks
            .as_deref_mut()
            .expect("an arena page");
        match storage.map_chunk(id, u64::from(s) * g, chunk) {
            Ok(()) => {
                map.slot(s).chunk = Some(chunk);
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
    fn idle_worth_moving(&self) -> bool {
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
    fn map_back<S: ComputeStorage>(
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
        let map = self.chunk_map(page).expect("an arena page");
        map.slot(slot).chunk = Some(chunk);
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
    fn take_idle_elsewhere<S: ComputeStorage>(
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
        let s = map.take_idle(&NONE)?;
        match storage.unmap_chunk(id, u64::from(s) * g) {
            Ok(chunk) => {
                map.slots[s as usize].chunk = None;
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
                map.slots[s as usize].idle = true;
                map.idle.push_front(s);
                map.idle_count += 1;
                Some(Err(err.into()))
            }
        }
    }

    /// Unmap and release the chunk under slot `s` (no live slice touches
    /// it and it is not queued idle); `false` when the unmap is refused
    /// (the chunk stays mapped, idle).
    fn unmap_slot<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        page: u32,
        id: StorageId,
        s: u32,
    ) -> bool {
        let pool = self.pages[page].pool;
        let map = self.pages[page]
            .chunks
            .as_deref_mut()
            .expect("an arena page");
        let g = map.granularity;
        match storage.unmap_chunk(id, u64::from(s) * g) {
            Ok(chunk) => {
                map.slots[s as usize].chunk = None;
                map.mapped -= 1;
                self.stats.chunks.unmaps += 1;
                self.drop_chunk(storage, pool, chunk, g);
                true
            }
            Err(err) => {
                tracing::warn!(%err, slot = s, "unmapping a chunk failed; it stays mapped, idle");
                map.slots[s as usize].idle = true;
                map.idle.push_back(s);
                map.idle_count += 1;
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
    fn on_chunk_bytes(&mut self, pool: u32, bytes: u64, added: bool) {
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
        for s in map.span(offset, bytes) {
            map.release_slot(s);
        }
        if release {
            let pool = self.pool(self.pages[page].pool);
            let threshold = match pool.kind {
                PoolKind::Arena { threshold, .. } => threshold,
                _ => 0,
            };
            // The threshold is the pool's: its other ranges' idle chunks
            // count against it (O(ranges), one in practice).
            let elsewhere = self.cached_chunk_bytes(pool) - self.cached_chunk_bytes_of(page);
            self.trim_chunks(storage, page, threshold.saturating_sub(elsewhere));
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
            let Some(s) = map.take_idle(&NONE) else {
                return;
            };
            if !self.unmap_slot(storage, page, id, s) {
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
    fn cached_chunk_bytes_of(&self, page: u32) -> u64 {
        self.pages[page]
            .chunks
            .as_deref()
            .map_or(0, |m| m.idle_count * m.granularity)
    }

    /// Bytes of idle mapped chunks on `pool`'s pages.
    pub(crate) fn cached_chunk_bytes(&self, pool: &crate::pool::Pool) -> u64 {
        pool.current
            .iter()
            .filter_map(|&p| self.pages[p].chunks.as_deref())
            .map(|m| m.idle_count * m.granularity)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map of `n` mapped slots, none live.
    fn mapped(n: u32) -> ChunkMap {
        let mut map = ChunkMap::new(1 << 16);
        for s in 0..n {
            map.slot(s).chunk = Some(ChunkId(u64::from(s) + 1));
        }
        map
    }

    #[test]
    fn slots_reused_in_place_do_not_grow_the_idle_queue() {
        let mut map = mapped(8);
        for _ in 0..10_000 {
            (0..8).for_each(|s| map.claim_slot(s));
            (0..8).for_each(|s| map.release_slot(s));
            assert!(map.idle.len() <= 2 * 8 + 64, "{} entries", map.idle.len());
        }
        assert_eq!(map.idle_count, 8);
        // Each idle slot comes out once, oldest first, then none.
        let order: Vec<u32> = std::iter::from_fn(|| map.take_idle(&NONE)).collect();
        assert_eq!(order, (0..8).collect::<Vec<_>>());
        assert!(map.slots.iter().all(|s| !s.kept));
    }

    #[test]
    fn compaction_keeps_the_order_of_the_latest_idle_periods() {
        let mut map = mapped(100);
        (0..100).for_each(|s| map.claim_slot(s));
        (0..100).for_each(|s| map.release_slot(s));
        // Slot 0 goes live and idle again: it is now the newest.
        for _ in 0..300 {
            map.claim_slot(0);
            map.release_slot(0);
        }
        assert!(map.idle.len() <= 2 * 100 + 64);
        let order: Vec<u32> = std::iter::from_fn(|| map.take_idle(&NONE)).collect();
        let mut expected: Vec<u32> = (1..100).collect();
        expected.push(0);
        assert_eq!(order, expected);
    }
}
