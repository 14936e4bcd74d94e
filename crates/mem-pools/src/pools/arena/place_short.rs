//! Placement when memory is short: a reservation whose chunks the device
//! refused even after the refused create shed every idle chunk that may
//! go (`shed_short.rs`) and released the chunk cache is placed again at
//! whichever end of *any* free slice of its pool touches the fewest
//! unmapped slots, and maps only those.
//!
//! Why: what stays mapped and idle after that shed sits in chunks that
//! also hold live data (a chunk is unmapped only whole), and the hot
//! path's placement (`place.rs`) weighs only [`PLACEMENT_PROBE`] free
//! slices of the free index's size class and the heads of the next
//! [`PLACEMENT_CLASSES`] classes. Near a full device the slice it picked
//! can need new chunks the device cannot give while another free slice
//! lies over idle slots that need none — the refusal is then
//! placement's, not the device's. (PyTorch's expandable segments place a
//! block by size alone and map what it lacks; a user switching to gpumem
//! must not see a refusal that a placement on mapped memory avoids.)
//! Test: `tests/short_memory.rs`, a slice refused new chunks lands in
//! the idle part of a partly live chunk that the hot path never weighs.
//!
//! Only the ends of a free slice are weighed: once every whole idle chunk
//! is shed, a free slice's mapped slots are the idle part of a chunk a
//! live neighbour holds, so they border that neighbour — an end. (An idle
//! chunk whose stream work still runs can sit mid-slice; the facade's
//! out-of-memory retry synchronizes its stream and releases it.)
//!
//! Cost: O(free slices) unmapped counts, only after a refusal and only
//! when a placement touches fewer unmapped slots than the refused one
//! does now; the hot path is unchanged. Undo: the slice is carved by the
//! reserve path only after its chunks are mapped, as before, and chunks
//! a refused retry created go back to the device (`map_missing`).
//!
//! [`PLACEMENT_PROBE`]: crate::pools::arena::place::PLACEMENT_PROBE
//! [`PLACEMENT_CLASSES`]: crate::pools::arena::place::PLACEMENT_CLASSES

use mem_storage::{ComputeStorage, StorageError};

use crate::error::IoError;
use crate::pools::arena::state::{ArenaCtx, Arenas};
use crate::pools::paged::pool::Pool;
use crate::tables::floor::Tables;

/// A placement: free slice, its high end (`true`), unmapped slots touched.
type Spot = (u32, bool, u64);

impl Arenas {
    /// After `err` refused chunks for `cap` bytes of arena pool `pool` at
    /// the placement `place_in_arena` chose: when memory is short (the
    /// device's `OutOfMemory`) and an end of a free slice of the pool
    /// touches fewer unmapped slots than that placement does now (after
    /// the refusal's shed), acquire there instead and return it;
    /// otherwise, or if that is refused too, the error, no slice changed.
    #[cold]
    #[inline(never)]
    pub(crate) fn place_when_short<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        pool: u32,
        cap: u64,
        may_map: bool,
        err: IoError,
    ) -> Result<(u32, bool), IoError> {
        if cx.t.lazy || !matches!(err, IoError::Storage(StorageError::OutOfMemory { .. })) {
            return Err(err);
        }
        // The free index's answer, as the refused reservation found it (a
        // refusal changes no slice), and the placement weighed from it.
        let p = &cx.pools[pool as usize];
        let Some(found) = p.index.find(&cx.t.slices, cap) else {
            return Err(err);
        };
        let (_, _, now) = self.arena_placement(cx.t, cx.pools, found, cap);
        match fewest_unmapped(cx.t, &cx.pools[pool as usize], cap) {
            Some((cand, at_end, unmapped)) if unmapped < now => {
                let node = &cx.t.slices[cand];
                let (page, size) = (node.page, node.size);
                let at = node.offset + if at_end { size - cap } else { 0 };
                self.acquire_unmapped(cx, page, at, cap, may_map)?;
                Ok((cand, at_end))
            }
            _ => Err(err),
        }
    }
}

/// Of every free slice of `pool` that holds `cap` bytes, the end where
/// they touch the fewest unmapped slots (ties: the first found, its low
/// end first); `None` when none holds them.
fn fewest_unmapped(t: &Tables, pool: &Pool, cap: u64) -> Option<Spot> {
    let mut best: Option<Spot> = None;
    pool.index.for_each(&t.slices, |cand| {
        let node = &t.slices[cand];
        if node.size < cap || best.is_some_and(|b| b.2 == 0) {
            return;
        }
        let Some(map) = t.pages[node.page].chunks.as_deref() else {
            best = Some((cand, false, 0)); // not an arena page: nothing to map
            return;
        };
        let low = map.unmapped_in(map.span(node.offset, cap));
        let high = map.unmapped_in(map.span(node.offset + node.size - cap, cap));
        let (at_end, unmapped) = if high < low {
            (true, high)
        } else {
            (false, low)
        };
        if best.is_none_or(|b| unmapped < b.2) {
            best = Some((cand, at_end, unmapped));
        }
    });
    best
}
