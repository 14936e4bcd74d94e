//! The pools, over the floor (`tables/`): the kinds — paged pools
//! (sliced and exclusive pages) in `paged/`, the exact-fit persistent pool
//! in `persistent.rs`, virtual-memory arenas in `arena/` — and
//! [`core::Core`], the floor's tables beside the pools and the arenas'
//! state, which routes a size to its pool; `dispatch.rs` sends a
//! reservation down its pool kind's path. Each kind's code is methods of
//! its own type taking the floor as an argument (`Pool` for paged
//! carving, `Arenas` for everything the arenas do).

pub(crate) mod arena;
pub(crate) mod core;
pub(crate) mod dispatch;
pub(crate) mod paged;
pub(crate) mod persistent;
