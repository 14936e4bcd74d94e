//! The floor every pool stands on, knowing no pool kind: the slot table
//! handles name, the slice and page tables (index-addressed nodes), the
//! slice cursors `bind` stamps, and the per-page indexes a page may carry
//! — where its slices start (sliced pages) and which chunk slots of its
//! range are mapped (arena pages). Nothing here branches on a pool's kind;
//! the pools (`pools/`) decide what goes in them.

pub(crate) mod chunk_map;
pub(crate) mod cursors;
pub(crate) mod floor;
pub(crate) mod nodes;
pub(crate) mod slots;
pub(crate) mod start_nodes;
pub(crate) mod starts;
