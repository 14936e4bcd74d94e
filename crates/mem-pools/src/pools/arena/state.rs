//! What every arena pool of a manager shares, apart from its pages (the
//! chunk cache and the releases to retry, the sleep state, the chunk
//! limits), and [`ArenaCtx`], what an arena call works on. Everything the
//! arenas do is a method of [`Arenas`] in the files beside this one (the
//! reserve path and placement, chunks, moves, the cache, release, stream
//! order, sleep). A method that maps, unmaps or releases takes one
//! [`ArenaCtx`] (the floor, the dynamic pools, the storage, borrowed
//! together); one that only reads takes the floor and the pools. So `Core`
//! lends its parts apart (`Core::arena`) and the arena never reaches back
//! into it. The names the other files share are defined here, so every
//! file of `arena/` imports this one and this one imports none of them.

use std::collections::{HashMap, VecDeque};

use mem_storage::ChunkId;

use crate::pools::arena::shed_learn::ShedLearner;
use crate::pools::paged::pool::Pool;
use crate::tables::floor::Tables;

/// The default share of idle slots past which idle chunks are shed before
/// physical memory grows: once they are at least 1/16 of an arena
/// manager's mapped slots, whole idle chunks are unmapped and kept for
/// reuse until the cache covers the run (with idle slots under three
/// times the share), or they are under 3/4 of it; below it holes keep
/// theirs (see `shed_idle`). `MemoryManagementOptions::arena_idle_share` sets
/// it; the frontier (memory against driver time) is in docs/pools.md.
pub const IDLE_SHARE: u64 = 16;

/// The default largest chunk an arena creates (64 MiB): a run of empty
/// slots gets one chunk per this many bytes. Larger: fewer driver calls,
/// more physical memory stranded in chunks partly reused (a chunk is
/// unmapped only whole); the frontier is in docs/pools.md.
/// `MemoryManagementOptions::arena_max_chunk` sets it.
pub const DEFAULT_MAX_CHUNK: u64 = 64 << 20;

/// One shed chunk, unmapped and held.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CachedChunk {
    pub(crate) chunk: ChunkId,
    pub(crate) bytes: u64,
    pub(crate) pool: u32,
}

/// The state between `sleep` and `wake`.
#[derive(Debug, Default)]
pub(crate) struct Asleep {
    /// The chunk's bytes by (arena page, slot), when preserved.
    pub(crate) saved: HashMap<(u32, u32), Vec<u8>>,
}

/// What an arena call that maps, unmaps or releases chunks works on: the
/// floor, the dynamic pools (an arena pool's usage counters and its
/// ranges) and the storage, borrowed together for the call.
pub(crate) struct ArenaCtx<'a, S> {
    /// The floor: slots, slices, pages and their chunk maps.
    pub(crate) t: &'a mut Tables,
    /// The dynamic pools, in routing order.
    pub(crate) pools: &'a mut [Pool],
    /// The storage chunks are created, mapped and released in.
    pub(crate) storage: &'a mut S,
}

/// The arenas' shared state (see the module docs).
#[derive(Debug)]
pub(crate) struct Arenas {
    /// Arena chunks, unmapped, whose release the storage refused: retried
    /// at each flush (their bytes already left the pools).
    pub(crate) unreleased_chunks: Vec<ChunkId>,
    /// Shed chunks, unmapped and held for the next runs to map
    /// (`chunk_cache.rs`), oldest first, and their bytes.
    pub(crate) chunk_cache: VecDeque<CachedChunk>,
    pub(crate) chunk_cache_bytes: u64,
    /// Set between `sleep` and `wake` (`sleep.rs`).
    pub(crate) asleep: Option<Asleep>,
    /// The largest chunk an arena creates, in bytes (`chunks.rs`).
    pub(crate) max_chunk_bytes: u64,
    /// Idle chunks are shed once they pass 1/`idle_share` of the mapped
    /// ones (0: never; `shed.rs`).
    pub(crate) idle_share: u64,
    /// Whether sheds pay, learned from re-creation (`shed_learn.rs`).
    pub(crate) learn: ShedLearner,
    /// While a shed runs: the bytes of the run it makes room for, which
    /// the cache's bound leaves cached (`chunk_cache.rs`); 0 otherwise.
    pub(crate) shed_for: u64,
}

impl Default for Arenas {
    fn default() -> Self {
        Self {
            unreleased_chunks: Vec::new(),
            chunk_cache: VecDeque::new(),
            chunk_cache_bytes: 0,
            asleep: None,
            max_chunk_bytes: DEFAULT_MAX_CHUNK,
            idle_share: IDLE_SHARE,
            learn: ShedLearner::default(),
            shed_for: 0,
        }
    }
}

impl Arenas {
    /// Bytes of the largest cached chunk (0: none).
    pub(crate) fn largest_cached_bytes(&self) -> u64 {
        self.chunk_cache.iter().map(|c| c.bytes).max().unwrap_or(0)
    }

    /// Bytes of `pool`'s cached (unmapped, held) chunks.
    pub(crate) fn cached_unmapped_bytes(&self, pool: u32) -> u64 {
        self.chunk_cache
            .iter()
            .filter(|c| c.pool == pool)
            .map(|c| c.bytes)
            .sum()
    }

    /// The cache position of the largest chunk no larger than `max_bytes`.
    pub(crate) fn largest_cached_at_most(&self, max_bytes: u64) -> Option<usize> {
        self.chunk_cache
            .iter()
            .enumerate()
            .filter(|(_, c)| c.bytes <= max_bytes)
            .max_by_key(|(_, c)| c.bytes)
            .map(|(i, _)| i)
    }

    /// The cache position of the smallest chunk larger than `min_bytes`
    /// and no larger than `max_bytes`.
    pub(crate) fn smallest_cached_between(&self, min_bytes: u64, max_bytes: u64) -> Option<usize> {
        self.chunk_cache
            .iter()
            .enumerate()
            .filter(|(_, c)| c.bytes > min_bytes && c.bytes <= max_bytes)
            .min_by_key(|(_, c)| c.bytes)
            .map(|(i, _)| i)
    }
}
