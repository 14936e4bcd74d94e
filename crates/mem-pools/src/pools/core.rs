//! The engine's state without the storage: the floor's [`Tables`]
//! (slots, slices, pages, counters), the pools over it, and what the
//! arena pools share, side by side so each can be borrowed apart.
//!
//! `Core` does no pool's work: a paged pool's (pages, growth, carving) is
//! methods of `Pool` in `paged/`, the arenas' is methods of `Arenas` in
//! `arena/`, each taking the floor as an argument; `Core` lends its parts
//! apart (`pool_parts`, `arena`, `arena_parts`) and `dispatch.rs` routes a request
//! to them. Every operation that can fail does its fallible step (an
//! index, a storage allocation) before it changes anything, so an error
//! leaves the state as it was.

use crate::error::IoError;
use crate::pools::arena::state::{ArenaCtx, Arenas};
use crate::pools::paged::pool::Pool;
use crate::pools::persistent::PersistentPool;
use crate::tables::floor::Tables;

#[derive(Debug)]
pub(crate) struct Core {
    /// The floor: slots, slices, pages, counters (`tables/floor.rs`).
    pub(crate) tables: Tables,
    /// Dynamic pools, in routing order.
    pub(crate) pools: Vec<Pool>,
    /// The persistent pool (`persistent.rs`), at routing position
    /// `PERSISTENT`.
    pub(crate) persistent: PersistentPool,
    /// What the arena pools share (`arena/state.rs`).
    pub(crate) arenas: Arenas,
}

impl Core {
    pub(crate) fn new(pools: Vec<Pool>, alignment: u64, max_page: u64, lazy: bool) -> Self {
        Self {
            tables: Tables::new(alignment, max_page, lazy),
            pools,
            persistent: PersistentPool::new(),
            arenas: Arenas::default(),
        }
    }

    /// The arenas' state and what an arena call that maps, unmaps or
    /// releases works on (the floor, the dynamic pools, `storage`),
    /// borrowed apart (`arena/state.rs`).
    #[inline(always)]
    pub(crate) fn arena<'a, S>(
        &'a mut self,
        storage: &'a mut S,
    ) -> (&'a mut Arenas, ArenaCtx<'a, S>) {
        let cx = ArenaCtx {
            t: &mut self.tables,
            pools: &mut self.pools,
            storage,
        };
        (&mut self.arenas, cx)
    }

    /// The arenas' state with the floor and the dynamic pools, borrowed
    /// apart: an arena method that only reads or counts takes these.
    #[inline(always)]
    pub(crate) fn arena_parts(&mut self) -> (&mut Arenas, &mut Tables, &mut [Pool]) {
        (&mut self.arenas, &mut self.tables, &mut self.pools)
    }

    pub(crate) fn pool(&self, pool: u32) -> &Pool {
        match self.pools.get(pool as usize) {
            Some(p) => p,
            None => &self.persistent,
        }
    }

    /// Pool `pool` (the persistent one at `PERSISTENT`) and the floor,
    /// borrowed apart: a paged pool's methods take both (`paged/`).
    #[inline(always)]
    pub(crate) fn pool_parts(&mut self, pool: u32) -> (&mut Pool, &mut Tables) {
        let p = match self.pools.get_mut(pool as usize) {
            Some(p) => p,
            None => &mut *self.persistent,
        };
        (p, &mut self.tables)
    }

    /// Put a free slice into its pool's free index.
    #[inline]
    pub(crate) fn index_insert(&mut self, pool: u32, slice: u32) {
        let (p, t) = self.pool_parts(pool);
        p.index.insert(&mut t.slices, slice);
    }

    /// Take a slice out of its pool's free index (no-op if not indexed).
    #[inline]
    pub(crate) fn index_remove(&mut self, pool: u32, slice: u32) {
        let (p, t) = self.pool_parts(pool);
        p.index.remove(&mut t.slices, slice);
    }

    /// The pool a size routes to in Auto mode: the first that accepts it.
    #[inline]
    pub(crate) fn route(&self, size: u64) -> Result<u32, IoError> {
        self.pools
            .iter()
            .position(|p| size <= p.max_size())
            .map(|i| i as u32)
            .ok_or_else(|| IoError::BufferTooBig {
                size,
                max: self.pools.iter().map(Pool::max_size).max().unwrap_or(0),
            })
    }
}
