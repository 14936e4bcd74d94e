//! The shed a refused create runs before it tries once more: every whole
//! idle chunk that may go, whatever the idle share says.
//!
//! Why: the due shed (`shed.rs`, `shed_idle`) runs only once idle
//! slots pass their share (1/16 of the mapped ones) and stops at 2/3 of
//! it, so below the share a refused create used to retry with every idle
//! chunk still mapped. Measured (`tests/shed_learning.rs`, a 64 MiB host
//! device, 64 KiB granules, buffers grown by reallocation beside 1 MiB
//! live ones, 19 MiB of headroom): refused wanting 90 new slots with 87
//! free, while 55 slots of whole idle chunks (a fully mapped 55-slot
//! hole, too small for the 92-slot slice) stayed mapped — 55 idle of 937
//! mapped is under the share, so the retry's shed did nothing. With
//! this shed the steps fit with 17 MiB of headroom, 1 MiB above the
//! floor for any allocator there (at 15 a step asks for a slice with
//! 64.7 MiB of live bytes counted with it; 16 fitted before the
//! learner's horizon went to 128 and the shed's stop to 3/4 of the
//! share, and is refused since: a matter of layout this close to the
//! floor); 16–19 MiB were refused before. The facade's
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
