//! The engine's state without the storage: slots, slices, pages, pools.
//!
//! Page-level operations (allocate, release, grow a page size) live in
//! `paged/pages.rs` and `paged/growth.rs`, slice-level carving in
//! `paged/carve.rs`, chunks in `arena/`. Every operation that can fail
//! does its fallible step (an index, a storage allocation) before it changes
//! anything, so an error leaves the state as it was.

use std::collections::HashMap;

use mem_storage::StorageId;

use crate::error::IoError;
use crate::pools::arena::state::Arenas;
use crate::pools::paged::pool::Pool;
use crate::pools::persistent::PersistentPool;
use crate::report::stats::PoolStats;
use crate::tables::nodes::{Arena, Page, SliceNode};
use crate::tables::slots::SlotTable;

#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) slots: SlotTable,
    pub(crate) slices: Arena<SliceNode>,
    /// `bind`'s cursors, the one cold field of a slice (`cursors.rs`).
    pub(crate) cursors: crate::tables::cursors::SliceCursors,
    pub(crate) pages: Arena<Page>,
    /// Mapped pages by storage id: a view handed out names its page in O(1).
    pub(crate) by_storage: HashMap<StorageId, u32>,
    /// Dynamic pools, in routing order.
    pub(crate) pools: Vec<Pool>,
    /// The persistent pool (`persistent.rs`), at routing position
    /// `PERSISTENT`.
    pub(crate) persistent: PersistentPool,
    pub(crate) alignment: u64,
    /// log2 of `alignment` (a power of two): offsets become start-map
    /// units by a shift on the split and coalesce paths, not a division.
    align_shift: u32,
    pub(crate) max_page: u64,
    pub(crate) lazy: bool,
    /// Reservations so far: the clock of exclusive pools' dealloc periods.
    pub(crate) clock: u64,
    pub(crate) next_page_uid: u64,
    pub(crate) stats: PoolStats,
    /// What the arena pools share (`arena/state.rs`).
    pub(crate) arenas: Arenas,
}

impl Core {
    pub(crate) fn new(pools: Vec<Pool>, alignment: u64, max_page: u64, lazy: bool) -> Self {
        debug_assert!(alignment.is_power_of_two());
        Self {
            slots: SlotTable::default(),
            slices: Arena::new("slice"),
            cursors: Default::default(),
            pages: Arena::new("page"),
            by_storage: HashMap::new(),
            pools,
            persistent: PersistentPool::new(),
            alignment,
            align_shift: alignment.trailing_zeros(),
            max_page,
            lazy,
            clock: 0,
            next_page_uid: 0,
            stats: PoolStats::default(),
            arenas: Arenas::default(),
        }
    }

    pub(crate) fn pool(&self, pool: u32) -> &Pool {
        match self.pools.get(pool as usize) {
            Some(p) => p,
            None => &self.persistent,
        }
    }

    pub(crate) fn pool_mut(&mut self, pool: u32) -> &mut Pool {
        match self.pools.get_mut(pool as usize) {
            Some(p) => p,
            None => &mut self.persistent,
        }
    }

    /// Put a free slice into its pool's free index.
    #[inline]
    pub(crate) fn index_insert(&mut self, pool: u32, slice: u32) {
        let Core {
            pools,
            persistent,
            slices,
            ..
        } = self;
        let p = pools.get_mut(pool as usize).unwrap_or(&mut **persistent);
        p.index.insert(slices, slice);
    }

    /// Take a slice out of its pool's free index (no-op if not indexed).
    #[inline]
    pub(crate) fn index_remove(&mut self, pool: u32, slice: u32) {
        let Core {
            pools,
            persistent,
            slices,
            ..
        } = self;
        let p = pools.get_mut(pool as usize).unwrap_or(&mut **persistent);
        p.index.remove(slices, slice);
    }

    /// The alignment unit holding byte `offset` of a page (its start-map
    /// key).
    #[inline]
    pub(crate) fn unit(&self, offset: u64) -> u64 {
        offset >> self.align_shift
    }

    /// `size` rounded up to the alignment (zero takes one unit), checked.
    #[inline]
    pub(crate) fn capacity(&self, size: u64) -> Result<u64, IoError> {
        // The alignment is a power of two: round with a mask, checked.
        let a = self.alignment;
        size.max(1)
            .checked_add(a - 1)
            .map(|v| v & !(a - 1))
            .ok_or(IoError::InvalidSize { size, alignment: a })
    }

    /// The pool a size routes to in Auto mode: the first that accepts it.
    #[inline]
    pub(crate) fn route(&self, size: u64) -> Result<u32, IoError> {
        self.pools
            .iter()
            .position(|p| size <= p.max_size())
            .map(|i| i as u32)
            .ok_or(IoError::BufferTooBig {
                size,
                max: self.pools.iter().map(Pool::max_size).max().unwrap_or(0),
            })
    }
}
