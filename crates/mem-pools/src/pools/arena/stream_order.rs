//! Stream-ordered reclamation of arena chunks: an idle chunk is unmapped
//! only once the work that may still touch it is complete, checked without
//! waiting.
//!
//! A slice freed on a stream may be reused by that stream's next work at
//! once (the stream runs its work in order), but unmapping its chunk is
//! not ordered after anything: on CUDA `cuMemUnmap` of memory a queued
//! kernel still reads is a device fault. So each slot, when it goes idle,
//! is stamped with the stream's submit cursor then (all work that may use
//! it was submitted by that point: the slice's last user dropped it
//! first), and a chunk is shed, trimmed or given back at cleanup only
//! once every slot of it is idle and stamped at or below the stream's
//! completed cursor. No reserve, free or cleanup path waits: a chunk not
//! yet ready stays mapped and idle, and a reservation that needs memory
//! creates a chunk instead. Waits happen only where the caller asks for
//! one: an explicit synchronize, `sleep` (which synchronizes the storage
//! before it unmaps anything), and an out-of-memory retry, which waits
//! for this stream (the only one whose work touches its engine's chunks;
//! other streams' uses are held off the free until they complete, see the
//! gpumem facade's `record_use`) when [`MemoryManagement::arena_chunks_waiting`](crate::MemoryManagement::arena_chunks_waiting)
//! says an idle chunk waits for it.
//!
//! An engine whose runtime never reports progress keeps both cursors at 0:
//! every stamp is 0 and every idle chunk is ready, as if each call
//! followed a synchronize. A runtime on a real device reports its
//! stream's cursors before each call ([`MemoryManagement::set_stream_progress`](crate::MemoryManagement::set_stream_progress);
//! the gpumem facade does).

use crate::pools::arena::state::Arenas;
use crate::pools::paged::pool::Pool;
use crate::tables::floor::Tables;

impl Arenas {
    /// The stream's cursors now (every call of the facade passes them; they
    /// seldom move, so the unchanged case is an inlined compare).
    #[inline]
    pub(crate) fn set_progress(
        &mut self,
        t: &mut Tables,
        pools: &mut [Pool],
        submitted: u64,
        completed: u64,
    ) {
        if t.progress != (submitted, completed) {
            self.move_progress(t, pools, submitted, completed);
        }
    }

    /// [`Self::set_progress`] when a cursor moved: every arena page of the
    /// current pages takes the new cursors.
    #[inline(never)]
    fn move_progress(
        &mut self,
        t: &mut Tables,
        pools: &mut [Pool],
        submitted: u64,
        completed: u64,
    ) {
        t.progress = (submitted, completed);
        for pool in pools.iter() {
            for &page in &pool.current {
                if let Some(map) = t.pages[page].chunks.as_deref_mut() {
                    map.shed_stuck &= map.completed == completed;
                    (map.submitted, map.completed) = (submitted, completed);
                }
            }
        }
    }

    pub(crate) fn arena_chunks_waiting(&self, t: &Tables, pools: &[Pool]) -> bool {
        pools
            .iter()
            .flat_map(|p| &p.current)
            .filter_map(|&pg| t.pages[pg].chunks.as_deref())
            .any(|map| map.idle_waiting())
    }
}
