//! An arena's reserve path (`pools/dispatch.rs` routes it here), and where
//! an arena reservation goes among the free slices that fit it: on chunks
//! already mapped, when it can.
//!
//! On a virtual-memory arena every slot a new slice touches without a
//! chunk costs two driver calls (create + map, or unmap + map of an idle
//! chunk moved out of a hole), and a slot already mapped costs none. Freed
//! holes keep their chunks (idle), the never-used end of a range has none,
//! so *which* fitting free slice serves a request, and at which end of it,
//! decides most of an arena's calls. Addresses are free and physical
//! memory is not: a request placed in a larger hole that is mapped costs
//! less physical memory than one placed in a tighter hole that is not.
//!
//! So the free index's good-fit answer is the first candidate, not the
//! verdict: [`PLACEMENT_PROBE`] free slices of its size class (it
//! included) and the heads of the next [`PLACEMENT_CLASSES`] non-empty
//! classes are weighed, each at its low and its high end, and the request
//! goes where it touches fewest unmapped slots (ties: the earlier
//! candidate, low end first; the first fully mapped one ends the search).
//! With sheds taken from the edges of stripped regions
//! (`tables/chunk_map/idle.rs`), this is what cuts the calls of the
//! workloads that move chunks (random, serving, bert-infer) for the same
//! peak physical memory: whole mapped holes stay whole and the next
//! reservations land on them. The numbers are in docs/pools.md.
//!
//! Cost: at most 2 × (`PLACEMENT_PROBE` + `PLACEMENT_CLASSES`) counts of
//! unmapped slots, each a popcount over the chunk map's mapped bits (64
//! slots a word); a request whose first candidate is fully mapped at its
//! low end (the steady state of a reused hole) costs one count.

use crate::error::IoError;
use mem_storage::ComputeStorage;

use crate::pools::arena::state::{ArenaCtx, Arenas};
use crate::pools::paged::pool::Pool;
use crate::tables::floor::Tables;
use crate::tables::slots::NIL;

/// Free slices of the found one's size class weighed (it included).
pub(crate) const PLACEMENT_PROBE: usize = 4;
/// Non-empty size classes above the found one's whose head is weighed.
pub(crate) const PLACEMENT_CLASSES: usize = 8;

/// The best placement so far: free slice, high end, unmapped slots.
type Best = (u32, bool, u64);

impl Arenas {
    /// An arena's reservation of `cap` (aligned) bytes in `pool` for slot
    /// `owner`: a free slice (else a new range), placed on mapped chunks
    /// ([`Self::place_in_arena`]) before anything is carved — a refusal
    /// changes no slice — then cut at the chosen end.
    #[inline]
    pub(crate) fn reserve<S: ComputeStorage>(
        &mut self,
        cx: ArenaCtx<'_, S>,
        pool: u32,
        (cap, size): (u64, u64),
        owner: u32,
        may_map: bool,
    ) -> Result<u32, IoError> {
        // Taken apart: on the reserve path the three stay in registers,
        // and a context is built again only for a call that needs it.
        let ArenaCtx { t, pools, storage } = cx;
        let p = &mut pools[pool as usize];
        let free = p.index.find(&t.slices, cap);
        let range = (pool, p.page_size.max(cap));
        let allocate = (size, may_map);
        let found = p.found_or_new_page(t, storage, free, range, allocate)?;
        let placed = self.place_in_arena(ArenaCtx { t, pools, storage }, found, cap, may_map);
        let (mut slice, at_end) = match placed {
            Ok(placed) => placed,
            // Memory may be short: placed again (`place_short.rs`).
            Err(err) => {
                let mut cx = ArenaCtx { t, pools, storage };
                self.place_when_short(&mut cx, pool, cap, may_map, err)?
            }
        };
        let p = &mut pools[pool as usize];
        if at_end {
            slice = p.split_tail(t, slice, cap)?;
        } else {
            p.take_front(t, slice, cap)?;
        }
        p.occupy(t, slice, size, owner);
        Ok(slice)
    }
    /// Where an arena reservation of `cap` bytes goes, starting from
    /// `found` (the free index's answer): the free slice and its end
    /// (`true`: the high end) that touch fewest unmapped chunk slots, with
    /// chunks under those bytes before anything is carved — mapped now, or
    /// counted for a lazy page's first dereference. Without `may_map` (a
    /// capture window) an unmapped slot is refused. On an error no slice
    /// changed.
    #[inline]
    pub(crate) fn place_in_arena<S: ComputeStorage>(
        &mut self,
        cx: ArenaCtx<'_, S>,
        found: u32,
        cap: u64,
        may_map: bool,
    ) -> Result<(u32, bool), IoError> {
        let (slice, at_end, unmapped) = self.arena_placement(cx.t, cx.pools, found, cap);
        let node = &cx.t.slices[slice];
        let page = node.page;
        let offset = match at_end {
            true => node.offset + node.size - cap,
            false => node.offset,
        };
        if cx.t.lazy {
            self.claim_lazily(cx.t, page, offset, cap);
        } else {
            self.acquire_chunks(cx, page, offset, cap, may_map, unmapped == 0)?;
        }
        Ok((slice, at_end))
    }

    /// The free slice of an arena pool, starting from `found` (the free
    /// index's answer for `cap` bytes), its end (`true`: the high end)
    /// where `cap` bytes touch fewest unmapped chunk slots, and how many
    /// they touch there (0: acquire has nothing to map or check).
    #[inline]
    pub(crate) fn arena_placement(
        &self,
        t: &Tables,
        pools: &[Pool],
        found: u32,
        cap: u64,
    ) -> (u32, bool, u64) {
        let mut best: Best = (found, false, u64::MAX);
        let mut cursor = found;
        for _ in 0..PLACEMENT_PROBE {
            if cursor == NIL || best.2 == 0 {
                break;
            }
            self.weigh(t, cursor, cap, &mut best);
            cursor = t.slices[cursor].free_next;
        }
        if best.2 > 0 {
            let pool = t.pages[t.slices[found].page].pool;
            let index = &pools[pool as usize].index;
            index.heads_above(cap, PLACEMENT_CLASSES, |head| {
                self.weigh_apart(t, head, cap, &mut best);
                best.2 > 0
            });
        }
        best
    }

    /// [`Self::weigh`] out of line: the heads of the classes above, weighed
    /// less often than the first class's candidates.
    #[inline(never)]
    fn weigh_apart(&self, t: &Tables, cand: u32, cap: u64, best: &mut Best) {
        self.weigh(t, cand, cap, best);
    }

    /// Weigh `cap` bytes at both ends of free slice `cand` against `best`.
    #[inline(always)]
    fn weigh(&self, t: &Tables, cand: u32, cap: u64, best: &mut Best) {
        let node = &t.slices[cand];
        if node.size < cap {
            return; // a smaller slice of the same class
        }
        let Some(map) = t.pages[node.page].chunks.as_deref() else {
            *best = (cand, false, 0); // not an arena page: nothing to map
            return;
        };
        let low = map.unmapped_in(map.span(node.offset, cap));
        if low < best.2 {
            *best = (cand, false, low);
        }
        if node.size > cap && best.2 > 0 {
            let high = map.unmapped_in(map.span(node.offset + node.size - cap, cap));
            if high < best.2 {
                *best = (cand, true, high);
            }
        }
    }
}
