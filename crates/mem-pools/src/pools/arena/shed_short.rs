//! The shed a refused create runs before it tries once more: every whole
//! idle chunk that may go, whatever the idle share says.
//!
//! Why: the due shed (`shed.rs`, `shed_idle`) runs only once idle
//! slots pass their share (1/16 of the mapped ones) and stops under it
//! (`SHED_TO_PERCENT`), so below the share a refused create used to retry
//! with every idle chunk still mapped: a fully mapped hole of whole idle
//! chunks, too small for the slice and under the share, stayed mapped
//! while the create it could have made room for was refused. With this
//! shed, buffers grown by reallocation on a nearly full device fit close
//! to the floor any allocator has there (`tests/shed_learning.rs`; the
//! numbers are in docs/pools.md). This close to the floor whether a step
//! fits is a matter of layout, so a change of the shed constants may move
//! the smallest headroom that fits either way. The facade's
//! out-of-memory retry would release such chunks too (its
//! `cleanup(true)`), but only once the engine has refused, after
//! waiting for the streams whose chunks wait and releasing every
//! stream's cached memory; an engine used alone has no such retry.
//!
//! The chunks go to the cache, so the run maps them before it creates
//! (`run_cover.rs`) and the cache's bound releases the rest, sparing the
//! run's bytes (`Arenas::shed_for`). Cold: only after a refusal, and the
//! calls it makes buy memory the device is short of.

use mem_storage::ComputeStorage;

use crate::pools::arena::state::{ArenaCtx, Arenas};
use crate::tables::chunk_map::NONE;

impl Arenas {
    /// Unmap every whole idle chunk whose stream work is complete, of
    /// `page` first (none touching `keep`, the span being acquired), then
    /// of every other arena page, into the cache, sparing `need` bytes of
    /// it from the cache's bound. A chunk whose unmap is refused stays
    /// mapped, idle, and ends the page's walk.
    #[cold]
    #[inline(never)]
    pub(crate) fn shed_all_idle<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
        keep: &std::ops::RangeInclusive<u32>,
        need: u64,
    ) {
        let others = cx.pools.iter().flat_map(|p| &p.current).copied();
        let pages: Vec<u32> = std::iter::once(page)
            .chain(others.filter(|&pg| pg != page))
            .filter(|&pg| cx.t.pages[pg].chunks.is_some())
            .collect();
        self.shed_for = need;
        for pg in pages {
            let Some(id) = cx.t.page_storage(pg) else {
                continue;
            };
            let keep_here = if pg == page { keep.clone() } else { NONE };
            loop {
                let map = cx.t.arena_map(pg);
                // Each idle slot walked at most once a chunk: the walk
                // moves a slot it cannot shed behind the others.
                let limit = usize::try_from(map.idle_count).unwrap_or(usize::MAX);
                let Some((head, len)) = map.take_idle_extent(&keep_here, true, limit) else {
                    break;
                };
                if !self.unmap_extent(cx, pg, id, head, len, true) {
                    break;
                }
            }
        }
        self.shed_for = 0;
    }
}
