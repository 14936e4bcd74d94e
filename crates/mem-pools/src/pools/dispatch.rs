//! Routing a request to its pool: a reservation down its kind's path (one
//! match on the pool's [`PoolType`]: sliced and exclusive pages, the
//! persistent pool's too, in `paged/carve.rs`; arenas in
//! `arena/place.rs`), and a freed slice, an empty page or a known extent
//! back to its pool — with the arena's step in between where the page is
//! an arena range (its chunks, `arena/`). These are `Core`'s only methods
//! that do work; every kind's own work is its type's (`Pool`, `Arenas`).

use mem_storage::ComputeStorage;

use crate::config::PoolType;
use crate::error::IoError;
use crate::pools::core::Core;
use crate::pools::paged::carve::Allowance;

impl Core {
    /// Reserve `size` bytes in `pool` for slot `owner`; returns the slice.
    /// On an error nothing changed (see each kind's path).
    /// (The engine calls [`Self::reserve_sized`]; the tests call this.)
    #[cfg(test)]
    pub(crate) fn reserve_in<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        pool: u32,
        size: u64,
        owner: u32,
        allow: Allowance,
    ) -> Result<u32, IoError> {
        let sizes = (self.tables.capacity(size)?, size);
        self.reserve_sized(storage, pool, sizes, owner, allow)
    }

    /// `reserve_in` (the tests' entry) with the capacity already computed (the
    /// engine's reserve path checks it before claiming a slot, so it is
    /// not rounded twice): `sizes` is (capacity, requested).
    #[inline]
    pub(crate) fn reserve_sized<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        pool: u32,
        sizes: (u64, u64),
        owner: u32,
        allow: Allowance,
    ) -> Result<u32, IoError> {
        // One lookup of the pool serves both the match and the paged paths.
        let (p, t) = self.pool_parts(pool);
        match p.kind {
            PoolType::SlicedPages { .. } => p.reserve_sliced(t, storage, pool, sizes, owner, allow),
            PoolType::ExclusivePages { .. } => {
                p.reserve_exclusive(t, storage, pool, sizes, owner, allow.allocate)
            }
            PoolType::VirtualArena { .. } => {
                let (arenas, cx) = self.arena(storage);
                arenas.reserve(cx, pool, sizes, owner, allow.allocate)
            }
        }
    }

    /// Free a live slice: its pool uncounts it ([`Pool::vacate`]); an arena
    /// page's slots it leaves go idle (and past the pool's threshold, when
    /// `release`, back); then it goes back into its pool's index, coalesced
    /// — or, on an outdated page, the page is released once empty. A
    /// quarantined slice is never reused.
    ///
    /// [`Pool::vacate`]: crate::pools::paged::pool::Pool::vacate
    #[inline]
    pub(crate) fn free_slice<S: ComputeStorage>(
        &mut self,
        storage: &mut S,
        slice: u32,
        release: bool,
    ) {
        let node = &self.tables.slices[slice];
        if node.is_free() {
            return;
        }
        let pool = self.tables.pages[node.page].pool;
        let (p, t) = self.pool_parts(pool);
        let Some(freed) = p.vacate(t, slice) else {
            return; // quarantined
        };
        if freed.arena {
            let (a, cx) = self.arena(storage);
            a.release_chunks(cx, freed.page, freed.extent, release);
        }
        if freed.outdated {
            if freed.empty && release {
                self.release_page(storage, freed.page);
            }
            return;
        }
        let (p, t) = self.pool_parts(pool);
        p.coalesce(t, slice, &freed);
    }

    /// Give an empty page back to the storage (deferred until `flush`): an
    /// arena range unmaps and releases its chunks first, and stays when
    /// one stays mapped.
    pub(crate) fn release_page<S: ComputeStorage>(&mut self, storage: &mut S, page: u32) {
        let Some(info) = self.tables.pages.get(page) else {
            return;
        };
        let (pool, arena) = (info.pool, info.chunks.is_some());
        let (a, mut cx) = self.arena(storage);
        if arena && !a.unmap_all_chunks(&mut cx, page) {
            return; // a chunk stays mapped: the range cannot go back yet
        }
        let (p, t) = self.pool_parts(pool);
        p.release_page(t, storage, page);
    }

    /// Claim exactly `offset..offset + cap` of `page` for `owner` if that
    /// range lies inside one free slice (splitting it as needed;
    /// `paged/extent.rs`) and, on an arena page, on chunks still mapped (a
    /// capture window maps nothing). `None` when the range is (partly)
    /// live or cannot be cut.
    pub(crate) fn carve_extent(
        &mut self,
        page: u32,
        (offset, cap): (u64, u64),
        requested: u64,
        owner: u32,
    ) -> Result<Option<u32>, IoError> {
        let Some(info) = self.tables.pages.get(page) else {
            return Ok(None);
        };
        let pool = info.pool;
        let (p, t) = self.pool_parts(pool);
        p.index_starts(t, page);
        let Some(found) = self
            .pool(pool)
            .extent_slice(&self.tables, page, offset, cap)
        else {
            return Ok(None);
        };
        if !(self.arenas).claim_mapped_chunks(&mut self.tables, page, offset, cap) {
            return Ok(None);
        }
        let (p, t) = self.pool_parts(pool);
        p.take_extent(t, found, (offset, cap), (requested, owner))
            .map(Some)
    }
}
