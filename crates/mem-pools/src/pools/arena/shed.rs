//! Shedding: before physical memory grows, idle chunks past their share
//! are unmapped whole and kept for reuse (`chunk_cache.rs`), so the run
//! about to be mapped takes them instead of creating memory beside them.
//!
//! Why a share and not every idle chunk: a freed hole that keeps its
//! chunks is where the next reservation of that size lands for no driver
//! call; shedding it is an unmap now and a map later. Once idle slots pass
//! 1/[`IDLE_SHARE`] of the mapped ones (`arena_idle_share`), whole idle
//! chunks are shed in one batch until the cache covers the run (idle slots
//! under [`RUN_ONLY_SHARES`] shares) or they are under [`SHED_TO_PERCENT`]
//! % of a share (hysteresis: not one shed per reservation). The learner
//! (`shed_learn.rs`) skips a due shed at the live peak and while what the
//! last sheds released was created again; a refused create sheds every
//! idle chunk that may go (`shed_short.rs`).
//!
//! [`IDLE_SHARE`]: crate::IDLE_SHARE

use mem_storage::ComputeStorage;

use crate::pools::arena::state::{ArenaCtx, Arenas};
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
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
        keep: &std::ops::RangeInclusive<u32>,
        need: u64,
    ) {
        let share = self.idle_share;
        let (idle, mapped) = self.idle_and_mapped(cx.t, cx.pools);
        if share == 0 || idle == 0 || idle.saturating_mul(share) < mapped {
            return;
        }
        let live = &cx.t.stats.requested_bytes;
        let physical = cx.t.stats.reserved_bytes.current;
        if self.learn.skips_at_peak(live.current, live.peak, physical) {
            // Idle chunks at the live peak are holes placement refills.
            cx.t.stats.chunks.sheds_skipped += 1;
            return;
        }
        if self.learn.keeps() {
            // What the last sheds released was created again (`shed_learn.rs`).
            cx.t.stats.chunks.sheds_skipped += 1;
            return;
        }
        let others = cx.pools.iter().flat_map(|p| &p.current).copied();
        let pages: Vec<u32> = std::iter::once(page)
            .chain(others.filter(|&pg| pg != page))
            .filter(|&pg| cx.t.pages[pg].chunks.is_some())
            .collect();
        for pg in pages {
            let Some(id) = cx.t.page_storage(pg) else {
                continue;
            };
            let keep_here = if pg == page { keep.clone() } else { NONE };
            if cx.t.arena_map(pg).shed_stuck {
                continue; // nothing changed since a shed found nothing here
            }
            loop {
                let (idle, mapped) = self.idle_and_mapped(cx.t, cx.pools);
                let under_ceiling =
                    idle.saturating_mul(share) < mapped.saturating_mul(RUN_ONLY_SHARES);
                if (under_ceiling && self.chunk_cache_bytes >= need)
                    || idle.saturating_mul(share).saturating_mul(100)
                        < mapped.saturating_mul(SHED_TO_PERCENT)
                {
                    return;
                }
                let taken =
                    cx.t.arena_map(pg)
                        .take_idle_extent(&keep_here, true, SHED_PROBE);
                let Some((head, len)) = taken else {
                    cx.t.arena_map(pg).shed_stuck = true;
                    break;
                };
                if !self.unmap_extent(cx, pg, id, head, len, true) {
                    return;
                }
            }
        }
    }

    /// `shed_idle` before a run of `need` bytes is mapped, with the cache's
    /// bound sparing those bytes while it runs (`Arenas::shed_for`,
    /// `chunk_cache.rs`): what it sheds for the run is mapped by the run,
    /// not released and created again.
    ///
    /// Measured against sparing only runs of a whole chunk or more (with
    /// the short-memory retries and the learner's horizon of 128):
    /// random over seeds 1–16 holds +0.0033 × live more than expandable
    /// segments on average (≤ on 5 of 16) where that holds +0.0008 (8 of
    /// 16), the difference all in the first steps, when little is mapped
    /// and the bound is below a run; but seed 42 pays 11.47 against 11.49
    /// µs/op driver time (expandable segments 11.47) and bert-infer 4.00
    /// against 4.06; growth and serving the same either way. Kept for
    /// every run: one rule, no threshold, and the better driver time.
    pub(crate) fn shed_for_run<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
        keep: &std::ops::RangeInclusive<u32>,
        need: u64,
    ) {
        self.shed_for = need;
        self.shed_idle(cx, page, keep, need);
        self.shed_for = 0;
    }
}
