//! Pools of pages: sliced and exclusive pages (the persistent pool's too),
//! carving slices from them (and an exact known extent) and freeing them,
//! page-size growth, and the free index that finds a slice in O(1).

pub(crate) mod carve;
pub(crate) mod extent;
pub(crate) mod free_index;
pub(crate) mod free_replace;
pub(crate) mod growth;
pub(crate) mod pages;
pub(crate) mod pool;
pub(crate) mod vacate;
