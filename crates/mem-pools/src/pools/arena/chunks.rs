//! Physical chunks under an arena page: mapped where live slices are.
//!
//! An arena page is a virtual range carved exactly like a sliced page; this
//! module decides where physical memory sits under it. Every granule of the
//! range (a *chunk slot*) counts the live slices that overlap it:
//! - **placement** (before acquire, `pools/arena/place.rs`): of the free slices
//!   that fit — a few of the free index's size class and the heads of the
//!   next classes up — and each one's low or high end, a reservation goes
//!   where it touches fewest unmapped slots. Freed holes keep their chunks,
//!   so this is what turns reuse into zero driver calls; addresses are
//!   free, so a larger mapped hole beats a tighter unmapped one.
//! - **acquire** (a slice is about to go live): every slot it touches gets
//!   a chunk. A slot already mapped costs nothing. Each run of empty slots
//!   is cut into pieces of at most `arena_max_chunk` bytes, with the
//!   slice's partly covered first and last slot apart (`run_cover.rs`);
//!   a piece maps shed chunks kept for reuse first (`chunk_cache.rs`: one
//!   map each) and gets one new chunk for the rest (one create, one map).
//!   Before that (`shed.rs`), once idle slots (mapped, touched by no live slice) are
//!   at least the idle share of the mapped ones (1/[`IDLE_SHARE`] by
//!   default, `arena_idle_share`), whole idle chunks whose stream work is
//!   complete are shed in one batch (unmapped and cached — the cache's
//!   bound keeps at least the run's bytes meanwhile —, at the edge of
//!   stripped regions first) until the cache covers the run with idle
//!   slots under three shares, or they are under 3/4 of one; below it
//!   holes keep theirs, so an allocation landing there again costs no
//!   driver call.
//! - **release** (a slice was freed): slots no live slice touches any more
//!   become idle — still mapped, stamped with the stream's submit cursor
//!   (`stream_order.rs`) — up to the pool's release threshold (all its
//!   ranges together); beyond it the oldest idle chunks that may go (all
//!   their slots idle, their work complete) are unmapped and released
//!   (`chunk_release.rs`).
//!
//! All of it is O(slots the slice touches), plus O(arena ranges) for the
//! share and for the threshold of a pool with several ranges (one range
//! each in practice), plus the idle slots passed over when shedding
//! (at most `SHED_PROBE` a chunk); the idle queue is a FIFO linked through
//! the slots, so a slot going live again leaves it in O(1). A failed
//! driver call leaves every slot either mapped (live or idle) or unmapped,
//! never half, and a refused acquire never leaves more physical memory,
//! reserved bytes or cache than before: acquire maps before it counts; on
//! a refusal the chunks it created go back to the device, and what it shed
//! stays shed. Only when the device refuses that undo too does a chunk
//! stay behind, idle, for the threshold to trim later. A chunk whose
//! release is refused stays with the storage and its release is retried
//! at the engine's next flush.
//!
//! [`IDLE_SHARE`]: crate::IDLE_SHARE

use mem_storage::ComputeStorage;

use crate::error::IoError;
use crate::pools::arena::run_cover::{Spill, run_pieces};
use crate::pools::arena::state::{ArenaCtx, Arenas};
use crate::tables::floor::Tables;

/// A slice larger than `SLICE_CHUNKS` × `arena_max_chunk` gets chunks of
/// 1/`SLICE_CHUNKS` of its size instead: an 8 GiB slice is 8 creates and
/// 8 maps, not 128 of each. A slice that large is freed whole far more
/// often than it is reused in part, and the chunks beside a partial reuse
/// are shed whole as before. Only slices past 512 MiB at the default
/// chunk size are touched. Why not fewer, larger chunks: a chunk is
/// unmapped only whole, so the larger it is the more physical memory a
/// slice reused in part keeps mapped; at 1/4 of the slice serving goes
/// past its memory bound. The numbers are in docs/benchmarks.md (1/4 in
/// CHANGELOG.md).
pub(crate) const SLICE_CHUNKS: u64 = 8;

impl Arenas {
    /// Map chunks under every slot of `offset..offset + bytes` of arena
    /// page `page`, then count the slice on them. Without `may_map` (a
    /// capture window) only slots already mapped are accepted; `mapped`
    /// says placement counted no unmapped slot there (nothing to check).
    #[inline]
    pub(crate) fn acquire_chunks<S: ComputeStorage>(
        &mut self,
        cx: ArenaCtx<'_, S>,
        page: u32,
        offset: u64,
        bytes: u64,
        may_map: bool,
        mapped: bool,
    ) -> Result<(), IoError> {
        let ArenaCtx { t, pools, storage } = cx;
        let physical = t.stats.reserved_bytes.current;
        self.learn.on_reserve(bytes, physical);
        // The common case, an allocation landing on mapped chunks: one
        // pass to count (after placement's check), no driver call.
        if let Some(map) = t.chunk_map(page).filter(|_| mapped) {
            map.claim_mapped_span(map.span(offset, bytes));
            return Ok(());
        }
        let mut cx = ArenaCtx { t, pools, storage };
        self.acquire_unmapped(&mut cx, page, offset, bytes, may_map)
    }

    /// [`Self::acquire_chunks`] of a span placement found unmapped slots
    /// under (or a capture window's): out of line, so the common path
    /// above saves no registers for a driver call's.
    #[inline(never)]
    pub(crate) fn acquire_unmapped<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
        offset: u64,
        bytes: u64,
        may_map: bool,
    ) -> Result<(), IoError> {
        if self.claim_mapped_chunks(cx.t, page, offset, bytes) {
            return Ok(());
        }
        self.map_missing(cx, page, offset, bytes, may_map, true)?;
        self.claim_mapped_chunks(cx.t, page, offset, bytes);
        Ok(())
    }

    /// Count a slice on arena page `page` without mapping anything (lazy
    /// pages): its slots get chunks at its first dereference
    /// ([`Self::map_live_slots`]).
    pub(crate) fn claim_lazily(&self, t: &mut Tables, page: u32, offset: u64, bytes: u64) {
        let Some(map) = t.chunk_map(page) else {
            return;
        };
        for s in map.span(offset, bytes) {
            map.claim_slot(s);
        }
    }

    /// Map a chunk under every slot of `offset..offset + bytes` of arena
    /// page `page` that has none (a lazily counted slice at its first
    /// dereference). Without `may_map` an unmapped slot is
    /// [`IoError::CaptureWouldAllocate`]; while asleep nothing is mapped
    /// (the storage then answers `UnmappedAddress`).
    pub(crate) fn map_live_slots<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
        (offset, bytes): (u64, u64),
        may_map: bool,
    ) -> Result<(), IoError> {
        if self.asleep.is_some() {
            return Ok(());
        }
        // The slice is live: what this maps stays under it, even on a refusal.
        self.map_missing(cx, page, offset, bytes, may_map, false)
    }

    /// Map a chunk under every run of slots of `offset..offset + bytes` of
    /// arena page `page` that has none: one chunk sized to each run (see
    /// `map_run`), after shedding idle chunks past their share
    /// (`shed_idle`). Without `may_map` (a capture window) an unmapped slot
    /// is [`IoError::CaptureWouldAllocate`]. On a refusal with `undo`, the
    /// chunks this call created go back to the device (physical memory,
    /// reserved bytes and the cache are as they were, less what was shed;
    /// unless the device refuses the undo too: the chunk then stays idle).
    fn map_missing<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
        offset: u64,
        bytes: u64,
        may_map: bool,
        undo: bool,
    ) -> Result<(), IoError> {
        let (Some(id), Some(map)) = (cx.t.page_storage(page), cx.t.chunk_map(page)) else {
            return Ok(());
        };
        let span = map.span(offset, bytes);
        let g = map.granularity;
        let (mut s, last) = (*span.start(), *span.end());
        if s > last {
            return Ok(());
        }
        // The map holds the span (as mapping it will need); its runs of
        // unmapped slots are found by mapped-bit words, not slot by slot
        // (a word answers for 64 slots, where a walk pays for every slot
        // of the span, mapped or not).
        cx.t.arena_map(page).slot(last);
        let mut created = Vec::new();
        loop {
            s = cx.t.arena_map(page).next_slot(false, s, last);
            if s > last {
                break;
            }
            let first = s;
            s = cx.t.arena_map(page).next_slot(true, s, last);
            if !may_map {
                for (head, len) in created.into_iter().filter(|_| undo) {
                    self.unmap_slots(cx, page, id, (head, len));
                }
                return Err(IoError::CaptureWouldAllocate {
                    size: bytes,
                    page_size: g,
                });
            }
            let chunk = self.max_chunk_bytes.max(bytes / SLICE_CHUNKS);
            let cap = u32::try_from(chunk / g).map_or(u32::MAX, |c| c.max(1));
            // Walked, not collected: a run is a few pieces, and collecting
            // them would cost a heap allocation per run on the reserve path.
            let mut pieces = run_pieces((first, s - 1), &span, (offset, bytes), g, cap).peekable();
            let mut outer = true;
            while let Some((head, len)) = pieces.next() {
                self.shed_for_run(cx, page, &span, u64::from(len) * g);
                // Only the run's outer pieces may spill a cached chunk
                // onto the empty slots beside the run (`run_cover.rs`).
                let after = pieces.peek().is_none();
                let spill = Spill {
                    before: std::mem::take(&mut outer),
                    after,
                };
                let mut mapped = self.map_run(cx, page, id, (head, len), spill);
                let short = matches!(
                    mapped,
                    Err(IoError::Storage(
                        mem_storage::StorageError::OutOfMemory { .. }
                    ))
                );
                if short {
                    // Memory is short: shedding pays after all (a learned
                    // keep, a shed skipped at the live peak, or idle slots
                    // under their share). The refused run left nothing
                    // mapped; shed every idle chunk that may go
                    // (`shed_short.rs`) and try it once more.
                    if !self.learn.is_short() {
                        self.learn.forget();
                    }
                    self.shed_all_idle(cx, page, &span, u64::from(len) * g);
                    mapped = self.map_run(cx, page, id, (head, len), spill);
                }
                if let Err(err) = mapped {
                    for (head, len) in created.into_iter().filter(|_| undo) {
                        self.unmap_slots(cx, page, id, (head, len));
                    }
                    return Err(err);
                }
                created.push((head, len));
            }
        }
        Ok(())
    }

    /// Count a slice at `offset..offset + bytes` on the chunks of arena
    /// page `page` if every slot it touches is mapped (no driver call);
    /// `false`, changing nothing, when one is not. Non-arena pages: `true`.
    pub(crate) fn claim_mapped_chunks(
        &self,
        t: &mut Tables,
        page: u32,
        offset: u64,
        bytes: u64,
    ) -> bool {
        let Some(map) = t.chunk_map(page) else {
            return true;
        };
        map.claim_span(map.span(offset, bytes))
    }
}
