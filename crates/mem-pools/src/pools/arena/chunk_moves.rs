//! Driver calls under arena slots: map a run of empty slots with cached
//! chunks and one new chunk sized to the rest, shed idle chunks in a
//! batch when they pass their share, unmap a chunk whole, keep it for
//! reuse or release it. Every step leaves a slot mapped or unmapped,
//! never half (see `chunks.rs` for the policy and its guarantees).
//!
//! Why sized chunks and no moves: a chunk is one `cuMemCreate` and one
//! `cuMemMap` however large, so a run of k empty slots costs two calls,
//! not 2k. A chunk of k slots can only be unmapped whole, so an idle
//! chunk is no longer moved slot by slot into a hole (unmap + map per
//! slot); once idle chunks pass their share of the mapped slots (1/16 by
//! default, [`IDLE_SHARE`]; the `arena_idle_share` knob), whole idle
//! chunks are unmapped in one batch until the cache covers the run (idle
//! slots under [`RUN_ONLY_SHARES`] shares) or they are under
//! [`SHED_TO_PERCENT`] % of a share (hysteresis: not one per reservation),
//! and
//! kept for reuse (`chunk_cache.rs`), and the run maps them before it
//! creates (`run_cover.rs`).
//!
//! [`IDLE_SHARE`]: crate::IDLE_SHARE

use mem_storage::{ChunkId, ComputeStorage, StorageId};

use crate::pools::arena::state::Arenas;
use crate::pools::paged::pool::Pool;
use crate::tables::chunk_map::NONE;
use crate::tables::floor::Tables;

/// A shed goes on until idle slots are under this percentage of their
/// share. Measured (docs/pools.md, `gpumem replay --json`, default share,
/// before the run-only stop below): at 50 % serving held 1.032 × live at 66.3 µs driver time per op, at
/// 67 % 1.025 at 62.3 µs, the other traces unchanged; at 77 %
/// bert-infer rose over its limit (1.056). Re-swept 2026-12-05 with the
/// run-only stop, the shed learner and the cache's floor (eval.sh, seeds
/// 42, 1–5, plus seeds 1–16 of random, growth, serving): this stop now
/// binds only for a run the cache cannot cover, and 75 % holds
/// bert-infer at 1.039 × live with 4.07 → 4.00 µs/op (`a100`, 413 → 395
/// calls in the second half) and growth seed 2 at 28.98 → 28.90; no
/// other line moves, nor any 16-seed mean. 70 and 72 % move bert-infer
/// the same; 80–90 % also put random seed 5 at 1.127 → 1.130 (90 %:
/// seed 3 1.119 → 1.138, past expandable segments); 100 % serving seed
/// 4 at 25.80 → 28.76 µs/op; 50–60 % move only growth (+0.1 µs).
pub(crate) const SHED_TO_PERCENT: u64 = 75;

/// While idle slots are under this many times their share, a shed stops
/// as soon as the cache holds what the run lacks (see `shed_idle`); past
/// it the shed goes on to [`SHED_TO_PERCENT`] % of the share. Measured
/// at the default share (docs/pools.md): at 1 (stop only once under the
/// share) serving 53.7 µs driver time per op at 1.027 × live, random
/// 30.6 µs at 1.130; at 3 serving 24.2 µs at 1.032, random 12.0 µs at
/// 1.135, bert-infer 1.039; at 4 and up bert-infer passes its limit
/// (1.086: idle chunks left mapped take small slices and strand).
pub(crate) const RUN_ONLY_SHARES: u64 = 3;

/// Idle slots of the list walked at most for one chunk to shed: bounds
/// the search when the oldest idle slots sit in chunks still partly live.
pub(crate) const SHED_PROBE: usize = 256;

impl Arenas {
    /// Unmap and release every chunk over the `len` mapped slots from
    /// `first` of `page` and the chunks' slots past them (a refused
    /// acquire's undo).
    pub(crate) fn unmap_slots<S: ComputeStorage>(
        &mut self,
        t: &mut Tables,
        pools: &mut [Pool],
        storage: &mut S,
        page: u32,
        id: StorageId,
        (first, len): (u32, u32),
    ) {
        let mut s = first;
        while s < first + len {
            let map = t.arena_map(page);
            let (head, slots) = map.extent(s);
            // A cached chunk mapped past its run queued its extra slots idle.
            for t in head..head + slots {
                if map.is_idle(t) {
                    map.unqueue(t);
                }
            }
            self.unmap_extent(t, pools, storage, page, id, head, slots, false);
            s = head + slots;
        }
    }

    /// Idle and mapped slots of every arena page of the manager.
    fn idle_and_mapped(&self, t: &Tables, pools: &[Pool]) -> (u64, u64) {
        pools
            .iter()
            .flat_map(|p| &p.current)
            .filter_map(|&pg| t.pages[pg].chunks.as_deref())
            .fold((0, 0), |(i, m), map| (i + map.idle_count, m + map.mapped))
    }

    /// Before physical memory grows by `need` bytes: once idle slots are
    /// at least 1/`idle_share` of the mapped ones (all arena pages of the
    /// manager; never when it is 0), unmap whole idle chunks and keep them
    /// for reuse — of `page` first, none touching `keep`, at the edge of
    /// stripped regions first — until the cache holds `need` bytes with
    /// idle slots under [`RUN_ONLY_SHARES`] times the share, or idle slots
    /// are under [`SHED_TO_PERCENT`] % of the share, or none is left that
    /// may go. Below the share nothing is shed and holes keep their chunks
    /// for the next reservation that lands there (no call at all).
    ///
    /// Why stop once the run is covered: a chunk shed past what the next
    /// runs map waits in the cache, its bound releases the oldest, and a
    /// later run creates the bytes again — unmap, release, create, map
    /// and set-access for memory that only changed place. The ceiling
    /// keeps idle chunks left mapped from piling up where small slices
    /// would strand them. Measured at the default share (docs/pools.md,
    /// before → after): serving 62.3 → 24.2 µs driver time per op (1.025
    /// → 1.032 × live), random 33.0 → 12.0 µs (1.128 → 1.135), bert-infer
    /// 4.32 → 4.14 µs (1.045 → 1.039).
    pub(crate) fn shed_idle<S: ComputeStorage>(
        &mut self,
        t: &mut Tables,
        pools: &mut [Pool],
        storage: &mut S,
        page: u32,
        keep: &std::ops::RangeInclusive<u32>,
        need: u64,
    ) {
        let share = self.idle_share;
        let (idle, mapped) = self.idle_and_mapped(t, pools);
        if share == 0 || idle == 0 || idle.saturating_mul(share) < mapped {
            return;
        }
        let live = &t.stats.requested_bytes;
        let physical = t.stats.reserved_bytes.current;
        if self.learn.skips_at_peak(live.current, live.peak, physical) {
            // Idle chunks at the live peak are holes placement refills.
            t.stats.chunks.sheds_skipped += 1;
            return;
        }
        if self.learn.keeps() {
            // What the last sheds released was created again (`shed_learn.rs`).
            t.stats.chunks.sheds_skipped += 1;
            return;
        }
        let others = pools.iter().flat_map(|p| &p.current).copied();
        let pages: Vec<u32> = std::iter::once(page)
            .chain(others.filter(|&pg| pg != page))
            .filter(|&pg| t.pages[pg].chunks.is_some())
            .collect();
        for pg in pages {
            let Some(id) = t.page_storage(pg) else {
                continue;
            };
            let keep_here = if pg == page { keep.clone() } else { NONE };
            if t.arena_map(pg).shed_stuck {
                continue; // nothing changed since a shed found nothing here
            }
            loop {
                let (idle, mapped) = self.idle_and_mapped(t, pools);
                let under_ceiling =
                    idle.saturating_mul(share) < mapped.saturating_mul(RUN_ONLY_SHARES);
                if (under_ceiling && self.chunk_cache_bytes >= need)
                    || idle.saturating_mul(share).saturating_mul(100)
                        < mapped.saturating_mul(SHED_TO_PERCENT)
                {
                    return;
                }
                let taken = t
                    .arena_map(pg)
                    .take_idle_extent(&keep_here, true, SHED_PROBE);
                let Some((head, len)) = taken else {
                    t.arena_map(pg).shed_stuck = true;
                    break;
                };
                if !self.unmap_extent(t, pools, storage, pg, id, head, len, true) {
                    return;
                }
            }
        }
    }

    /// Unmap the chunk at slot `head` covering `len` slots (no live slice
    /// touches it and none of its slots is queued idle), then keep it for
    /// reuse (`keep`: `chunk_cache.rs`) or release it; `false` when the
    /// unmap is refused (the chunk stays mapped, idle).
    // The floor, the pools and the storage, then what the call is about.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn unmap_extent<S: ComputeStorage>(
        &mut self,
        t: &mut Tables,
        pools: &mut [Pool],
        storage: &mut S,
        page: u32,
        id: StorageId,
        head: u32,
        len: u32,
        keep: bool,
    ) -> bool {
        let pool = t.pages[page].pool;
        let map = t.arena_map(page);
        let g = map.granularity;
        match storage.unmap_chunk(id, u64::from(head) * g) {
            Ok(chunk) => {
                map.set_extent(head, len, None);
                t.stats.chunks.unmaps += 1;
                if keep {
                    self.cache_chunk(t, pools, storage, pool, chunk, u64::from(len) * g);
                } else {
                    self.drop_chunk(t, pools, storage, pool, chunk, u64::from(len) * g);
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
        t: &mut Tables,
        pools: &mut [Pool],
        storage: &mut S,
        pool: u32,
        chunk: ChunkId,
        bytes: u64,
    ) {
        match storage.release_chunk(chunk) {
            Ok(()) => t.stats.chunks.releases += 1,
            Err(err) => {
                // The storage still holds it (and counts its bytes): the
                // release is retried at the next flush.
                tracing::warn!(%err, %chunk, "chunk release refused; retried at the next flush");
                self.unreleased_chunks.push(chunk);
            }
        }
        self.on_chunk_bytes(t, pools, pool, bytes, false);
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

/// The chunks that fill the empty slots `first..=last` of a slice at
/// `offset..offset + bytes` (slots `span`), as (first slot, slots): one
/// chunk per `cap` slots of the run, except that the slice's first and
/// last slot get a chunk of their own where the slice only partly covers
/// them. A
/// neighbour may share such a slot, and a chunk is unmapped only whole:
/// apart, the interior chunk goes idle whole when the slice is freed and
/// can be shed, instead of staying mapped while a neighbour lives on its
/// edge slot.
pub(crate) fn run_pieces(
    (first, last): (u32, u32),
    span: &std::ops::RangeInclusive<u32>,
    (offset, bytes): (u64, u64),
    g: u64,
    cap: u32,
) -> impl Iterator<Item = (u32, u32)> {
    let head_shared = first == *span.start() && first < last && offset % g != 0;
    let tail_shared = last == *span.end() && last > first && (offset + bytes) % g != 0;
    let inner = (first + u32::from(head_shared))..=(last - u32::from(tail_shared));
    let head = head_shared.then_some((first, 1));
    let tail = tail_shared.then_some((last, 1));
    let (istart, iend) = (*inner.start(), *inner.end());
    let middle = (!inner.is_empty())
        .then(|| {
            (istart..=iend)
                .step_by(cap as usize)
                .map(move |h| (h, (iend - h + 1).min(cap)))
        })
        .into_iter()
        .flatten();
    head.into_iter().chain(middle).chain(tail)
}
