//! The pools, over the floor (`tables/`): the kinds — paged pools
//! (sliced and exclusive pages, and the exact-fit persistent pool) in
//! `paged/`, virtual-memory arenas in `arena/` — and [`core::Core`], the
//! tables with the pools, which routes a size to its pool.

pub(crate) mod arena;
pub(crate) mod core;
pub(crate) mod paged;
