//! Virtual-memory arenas: physical chunks under a virtual range, mapped
//! only where live slices are — placement on mapped chunks, chunk moves
//! and the chunk cache, release, stream-ordered reclamation, and the
//! arena's side of `sleep` / `wake`. The chunk map itself (mapped slots,
//! the idle queue) is a per-page table of the floor (`tables/chunk_map/`).

pub(crate) mod chunk_cache;
pub(crate) mod chunk_moves;
pub(crate) mod chunk_release;
pub(crate) mod chunks;
pub(crate) mod place;
mod place_short;
pub(crate) mod run_cover;
mod shed;
pub(crate) mod shed_learn;
#[cfg(test)]
mod shed_learn_counts_tests;
#[cfg(test)]
mod shed_learn_tests;
mod shed_short;
pub(crate) mod sleep;
pub(crate) mod state;
pub(crate) mod stream_order;
