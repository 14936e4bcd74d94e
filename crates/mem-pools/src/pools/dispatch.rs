//! Routing a reservation to its pool's kind: one match on the pool's
//! [`PoolType`], then that kind's straight path — sliced and exclusive
//! pages (the persistent pool's too) in `paged/carve.rs`, arenas in
//! `arena/place.rs`.

use mem_storage::ComputeStorage;

use crate::config::PoolType;
use crate::error::IoError;
use crate::pools::core::Core;
use crate::pools::paged::carve::Allowance;

impl Core {
    /// Reserve `size` bytes in `pool` for slot `owner`; returns the slice.
    /// On an error nothing changed (see each kind's path).
    #[inline]
    pub(crate) fn reserve_in<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        pool: u32,
        size: u64,
        owner: u32,
        allow: Allowance,
    ) -> Result<u32, IoError> {
        let sizes = (self.tables.capacity(size)?, size);
        match self.pool(pool).kind {
            PoolType::SlicedPages { .. } => self.reserve_sliced(storage, pool, sizes, owner, allow),
            PoolType::ExclusivePages { .. } => {
                self.reserve_exclusive(storage, pool, sizes, owner, allow.allocate)
            }
            PoolType::VirtualArena { .. } => {
                let (arenas, t, pools) = self.arena_parts();
                arenas.reserve(t, pools, storage, pool, sizes, owner, allow.allocate)
            }
        }
    }
}
