//! Pools of pages: sliced and exclusive pages (and the persistent pool),
//! carving slices from them, page-size growth, the free index that finds a
//! slice in O(1), and the start map of sliced pages.

pub(crate) mod carve;
pub(crate) mod free_index;
pub(crate) mod growth;
pub(crate) mod pages;
pub(crate) mod pool;
pub(crate) mod start_nodes;
pub(crate) mod starts;
