//! Shed chunks kept for reuse: a chunk shed from an idle hole (see
//! `shed.rs`) is unmapped but not released. It waits, created and
//! still counted in its pool's reserved bytes, in the engine's cache of
//! unmapped chunks, and the next run of empty slots (of any arena pool:
//! the chunk's bytes move to it) is covered from it before anything is
//! created: largest chunk first, any chunk no larger than what is left of
//! the run. A reuse costs one map
//! where a new chunk costs a create and a map, and the driver prices a
//! create per 2 MiB (docs/storage.md).
//!
//! A chunk enters the cache only once its stream's work is complete (a
//! shed takes only such chunks), so mapping it again needs no check. The
//! cache is bounded: once its bytes pass 1/[`CACHE_SHARE`] of the mapped
//! chunk bytes, the oldest cached chunks are released, so physical memory
//! stays within what the shed share allows — but never below the bytes of
//! the run the shed in progress makes room for (`Arenas::shed_for`). It is released whole at an
//! explicit cleanup, at `sleep`, and when creating a chunk is refused
//! (before the refusal is returned); a pool's release threshold counts it.

use mem_storage::{ChunkId, ComputeStorage};

use crate::pools::arena::state::{ArenaCtx, Arenas, CachedChunk};
use crate::pools::paged::pool::Pool;
use crate::tables::floor::Tables;

/// The cache of unmapped chunks is kept under 1/32 of the mapped chunk
/// bytes (all arena pages of the engine); past it the oldest cached
/// chunks are released. The frontier is in docs/pools.md.
pub const CACHE_SHARE: u64 = 32;

impl Arenas {
    /// Keep the unmapped chunk `chunk` of `bytes` of `pool` for reuse,
    /// then release the oldest cached chunks past the cache's bound.
    ///
    /// Why the bound spares the run a shed makes room for (`Arenas::shed_for`):
    /// a shed stops once the cache holds the run's bytes, and the run maps
    /// cached chunks before it creates (`run_cover.rs`). With the bound alone,
    /// a run larger than 1/32 of the mapped bytes (early on, or a GiB slice)
    /// never saw the cache hold it: each chunk shed was released at once, the
    /// shed went on to `SHED_TO_PERCENT` % of the idle share (`shed.rs`), and
    /// the run created its bytes anew — unmap, release and create where an
    /// unmap and a map move the memory. A workload whose buffers grow by
    /// reallocation into GiB sizes paid that on every step. The trade-off:
    /// where an early chunk released and created again happened to stop the
    /// learner's sheds (`shed_learn.rs`) on a workload better off without
    /// them, sparing it lets those sheds run. The numbers are in
    /// docs/pools.md and docs/benchmarks.md.
    pub(crate) fn cache_chunk<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        pool: u32,
        chunk: ChunkId,
        bytes: u64,
    ) {
        self.chunk_cache
            .push_back(CachedChunk { chunk, bytes, pool });
        self.chunk_cache_bytes += bytes;
        let mapped = self.mapped_chunk_bytes(cx.t, cx.pools);
        // What the run being shed for will map stays: released here, it
        // would be created again a moment later.
        while self.chunk_cache_bytes.saturating_mul(CACHE_SHARE) > mapped
            && self.chunk_cache_bytes > self.shed_for
        {
            let Some(oldest) = self.chunk_cache.pop_front() else {
                break;
            };
            self.learn
                .on_release(oldest.bytes, mapped + self.chunk_cache_bytes);
            self.release_cached(cx, oldest);
        }
    }

    /// The largest cached chunk no larger than `max_bytes`, taken out of
    /// the cache for `pool`: a chunk another pool shed moves its bytes to
    /// `pool` (reserved bytes in all stay the same).
    pub(crate) fn take_cached(
        &mut self,
        pools: &mut [Pool],
        pool: u32,
        max_bytes: u64,
    ) -> Option<(ChunkId, u64)> {
        let best = self.largest_cached_at_most(max_bytes)?;
        self.take_cached_at(pools, pool, best)
    }

    /// The smallest cached chunk larger than `min_bytes` and no larger
    /// than `max_bytes`, taken out of the cache for `pool` (an over-cover,
    /// `run_cover.rs`).
    pub(crate) fn take_cached_between(
        &mut self,
        pools: &mut [Pool],
        pool: u32,
        min_bytes: u64,
        max_bytes: u64,
    ) -> Option<(ChunkId, u64)> {
        let best = self.smallest_cached_between(min_bytes, max_bytes)?;
        self.take_cached_at(pools, pool, best)
    }

    fn take_cached_at(
        &mut self,
        pools: &mut [Pool],
        pool: u32,
        i: usize,
    ) -> Option<(ChunkId, u64)> {
        let taken = self.chunk_cache.remove(i)?;
        self.chunk_cache_bytes -= taken.bytes;
        if taken.pool != pool {
            pools[taken.pool as usize].usage.bytes_reserved -= taken.bytes;
            let usage = &mut pools[pool as usize].usage;
            usage.bytes_reserved += taken.bytes;
            usage.mark();
        }
        Some((taken.chunk, taken.bytes))
    }

    /// Release every cached chunk of a pool `which` accepts (its bytes
    /// leave the pool); returns the bytes released.
    pub(crate) fn release_chunk_cache<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        which: impl Fn(u32) -> bool,
    ) -> u64 {
        let mut go = Vec::new();
        self.chunk_cache.retain(|c| {
            let leaves = which(c.pool);
            if leaves {
                go.push(*c);
            }
            !leaves
        });
        let mut released = 0;
        for cached in go {
            released += cached.bytes;
            self.release_cached(cx, cached);
        }
        released
    }

    /// Release cached chunks of `pool`, oldest first, until at most
    /// `keep_bytes` of its chunks stay cached; returns the bytes left.
    pub(crate) fn trim_chunk_cache<S: ComputeStorage>(
        &mut self,
        cx: &mut ArenaCtx<'_, S>,
        pool: u32,
        keep_bytes: u64,
    ) -> u64 {
        let mut cached: u64 = self.cached_unmapped_bytes(pool);
        while cached > keep_bytes {
            let Some(i) = self.chunk_cache.iter().position(|c| c.pool == pool) else {
                break;
            };
            let Some(oldest) = self.chunk_cache.remove(i) else {
                break;
            };
            cached -= oldest.bytes;
            self.release_cached(cx, oldest);
        }
        cached
    }

    fn release_cached<S: ComputeStorage>(&mut self, cx: &mut ArenaCtx<'_, S>, cached: CachedChunk) {
        self.chunk_cache_bytes = self.chunk_cache_bytes.saturating_sub(cached.bytes);
        self.drop_chunk(cx, cached.pool, cached.chunk, cached.bytes);
    }

    /// Bytes of chunks mapped under every arena page of the engine.
    fn mapped_chunk_bytes(&self, t: &Tables, pools: &[Pool]) -> u64 {
        pools
            .iter()
            .flat_map(|p| &p.current)
            .filter_map(|&pg| t.pages[pg].chunks.as_deref())
            .map(|m| m.mapped * m.granularity)
            .sum()
    }
}
