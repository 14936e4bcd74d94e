//! What every arena pool of a manager shares, apart from its pages: the
//! chunk cache and the releases to retry, the sleep state, the chunk
//! limits — and, in the files beside this one,
//! everything the arenas do, as methods of [`Arenas`]: the reserve path
//! and placement, chunks, moves, the cache, release, stream order, sleep.
//! Each method takes the floor (`Tables`) and the dynamic pools (an arena
//! pool's usage counters and its ranges) as arguments, so `Core` holds
//! the three side by side (`Core::arena_parts`) and the arena never
//! reaches back into it.

use std::collections::VecDeque;

use mem_storage::ChunkId;

use crate::pools::arena::chunk_cache::CachedChunk;
use crate::pools::arena::chunks::{DEFAULT_MAX_CHUNK, IDLE_SHARE};
use crate::pools::arena::shed_learn::ShedLearner;
use crate::pools::arena::sleep::Asleep;

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
    /// While live bytes peak, a run's last new chunk is rounded up to a
    /// multiple of this many bytes (0: off; `grow_ahead.rs`).
    pub(crate) grow_ahead_bytes: u64,
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
            grow_ahead_bytes: 0,
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
