//! Covering a run of empty slots with physical memory: chunks kept for
//! reuse first, a new chunk only for what they leave.
//!
//! Why reuse comes first: creating physical memory is priced by the byte
//! and costs several times what mapping a chunk that exists does (map +
//! set-access), per call and per byte; the cost model's prices are in
//! docs/storage.md. A run maps, in this order:
//! 1. cached chunks no larger than what is left of it, largest first
//!    (exact cover, one map each);
//! 2. else the smallest cached chunk larger than what is left, mapped over
//!    it and the empty slots beside it (*over-cover*): a cached chunk
//!    cannot be mapped in part (`cuMemMap`'s offset into the chunk must be
//!    0), and the slots past the run become idle mapped memory that the
//!    next reservation placed there uses for no call. Physical memory does
//!    not grow (the chunk's bytes were held, cached), where a create would
//!    add the run's bytes beside a cache that stays;
//! 3. one new chunk for the rest (one create, one map).

use mem_storage::{ComputeStorage, StorageId};

use crate::error::IoError;
use crate::pools::arena::state::{ArenaCtx, Arenas};
use crate::pools::paged::pool::Pool;
use crate::tables::floor::Tables;

/// Which sides of a run a cached chunk may spill over, onto empty slots
/// that belong to no other piece of the same reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spill {
    /// Slots before the run's first slot.
    pub(crate) before: bool,
    /// Slots after the run's last slot.
    pub(crate) after: bool,
}

impl Spill {
    /// The run's chunks stay inside it (wake: the slots beside may be
    /// asleep under live slices).
    pub(crate) const NONE: Spill = Spill {
        before: false,
        after: false,
    };
}

impl Arenas {
    /// Cover the `len` empty slots from `first` of arena page `page`:
    /// cached chunks of any arena pool first (exact, then over-cover past
    /// the sides `spill` allows), then one new chunk for what is left.
    /// When the create is refused and chunks are cached, the cache is
    /// released and the create tried once more. On a refusal the slots
    /// mapped here are unmapped again and their chunks released.
    pub(crate) fn map_run<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        page: u32,
        id: StorageId,
        (first, len): (u32, u32),
        spill: Spill,
    ) -> Result<(), IoError> {
        let pool = cx.t.pages[page].pool;
        let g = cx.t.arena_map(page).granularity;
        let end = first + len;
        let mut s = first;
        while s < end && self.chunk_cache_bytes > 0 {
            let taken = match self.take_cached(cx.pools, pool, u64::from(end - s) * g) {
                Some(taken) => Some((s, taken)),
                None => self.take_over_cover(cx.t, cx.pools, page, (s, end), spill, s == first),
            };
            let Some((head, (chunk, bytes))) = taken else {
                break;
            };
            let slots = (bytes / g) as u32;
            if let Err(err) = cx.storage.map_chunk(id, u64::from(head) * g, chunk) {
                tracing::debug!(%err, "mapping a cached chunk failed; it is released");
                self.drop_chunk(cx, pool, chunk, bytes);
                self.unmap_slots(cx, page, id, (first, s - first));
                return Err(err.into());
            }
            let map = cx.t.arena_map(page);
            map.set_extent(head, slots, Some(chunk));
            // Slots past the run: mapped, touched by no slice, idle.
            for slot in (head..head + slots).filter(|slot| !(s..end).contains(slot)) {
                map.queue_idle(slot);
            }
            cx.t.stats.chunks.maps += 1;
            cx.t.stats.chunks.reuses += 1;
            s = (head + slots).min(end);
        }
        if s == end {
            return Ok(());
        }
        let bytes = u64::from(end - s) * g;
        let created = match cx.storage.create_chunk_of(bytes) {
            Err(_) if self.chunk_cache_bytes > 0 => {
                self.release_chunk_cache(cx, |_| true);
                cx.storage.create_chunk_of(bytes)
            }
            other => other,
        };
        let chunk = match created {
            Ok(chunk) => chunk,
            Err(err) => {
                self.unmap_slots(cx, page, id, (first, s - first));
                return Err(err.into());
            }
        };
        cx.t.stats.chunks.creates += 1;
        cx.t.stats.chunks.recreated_bytes += self.learn.on_create(bytes);
        self.on_chunk_bytes(cx.t, cx.pools, pool, bytes, true);
        match cx.storage.map_chunk(id, u64::from(s) * g, chunk) {
            Ok(()) => {
                let map = cx.t.arena_map(page);
                map.set_extent(s, end - s, Some(chunk));
                cx.t.stats.chunks.maps += 1;
                Ok(())
            }
            Err(err) => {
                tracing::debug!(%err, "mapping a new chunk failed; it is released");
                self.drop_chunk(cx, pool, chunk, bytes);
                self.unmap_slots(cx, page, id, (first, s - first));
                Err(err.into())
            }
        }
    }

    /// The smallest cached chunk larger than the empty slots `s..end` that
    /// fits in the empty, unclaimed slots around them (past `end` when
    /// `spill.after`, before `s` when `spill.before` and `at_first`: the
    /// run has nothing mapped yet), taken out of the cache, with the slot
    /// its mapping starts at.
    fn take_over_cover(
        &mut self,
        t: &mut Tables,
        pools: &mut [Pool],
        page: u32,
        (s, end): (u32, u32),
        spill: Spill,
        at_first: bool,
    ) -> Option<(u32, (mem_storage::ChunkId, u64))> {
        let g = t.arena_map(page).granularity;
        let range_slots = u32::try_from(t.pages[page].size / g).unwrap_or(u32::MAX);
        let need = end - s;
        let largest = self.largest_cached_bytes() / g;
        let largest = u32::try_from(largest).unwrap_or(u32::MAX);
        if largest <= need {
            return None;
        }
        let map = t.pages[page].chunks.as_deref()?;
        let empty = |t: u32| {
            map.slots
                .get(t as usize)
                .is_none_or(|slot| slot.chunk.is_none() && !map.is_live(t))
        };
        let room = largest.saturating_sub(need);
        let after = if spill.after {
            (end..range_slots.min(end.saturating_add(room)))
                .take_while(|&t| empty(t))
                .count() as u32
        } else {
            0
        };
        let before = if spill.before && at_first {
            (s.saturating_sub(room - after.min(room))..s)
                .rev()
                .take_while(|&t| empty(t))
                .count() as u32
        } else {
            0
        };
        let pool = t.pages[page].pool;
        let window = need + after + before;
        let (chunk, bytes) =
            self.take_cached_between(pools, pool, u64::from(need) * g, u64::from(window) * g)?;
        let slots = (bytes / g) as u32;
        // Spill after the run first (the range's unused end grows there),
        // the rest before it.
        let past = slots - need;
        let head = s - past.saturating_sub(after);
        Some((head, (chunk, bytes)))
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
