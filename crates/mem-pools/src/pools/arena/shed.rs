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
/// share: below the share, not at it, so that one batch of unmaps is not
/// followed by another at the next reservation. Why 3/4: a deeper shed
/// unmaps chunks the next runs map again (on serving's busy and quiet
/// phases that cost both memory and driver time); a shallower one leaves
/// idle chunks mapped where small slices strand them (bert-infer past its
/// memory bound, random holding more) and sheds again sooner. Since the
/// run-only stop ([`RUN_ONLY_SHARES`]) this stop binds only for a run the
/// cache cannot cover. The sweep is in docs/pools.md; the values tried
/// and not kept are in CHANGELOG.md.
pub(crate) const SHED_TO_PERCENT: u64 = 75;

/// While idle slots are under this many times their share, a shed stops
/// as soon as the cache holds what the run lacks (see `shed_idle`); past
/// it the shed goes on to [`SHED_TO_PERCENT`] % of the share. Why 3: with
/// the run-only stop only under the share itself, most sheds still went
/// past the run, and the chunks shed past it were released by the cache's
/// bound and created again (several times the driver time on serving and
/// random); from 4 shares up, idle chunks left mapped take small slices
/// and strand them (bert-infer past its memory bound). The numbers are in
/// docs/pools.md.
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
    /// would strand them. The trade: a little more memory held idle (up to
    /// the ceiling) for far fewer driver calls; the numbers are in
    /// docs/pools.md.
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
    /// Why every run, not only runs of a whole chunk or more: the two
    /// differ only in the first steps, when little is mapped and the bound
    /// is below a run. Sparing only large runs held a workload at a cap of
    /// live bytes (random) a little closer to expandable segments there,
    /// but paid more driver time (random, bert-infer); sparing every run is
    /// one rule with no threshold. The numbers are in docs/benchmarks.md.
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
