//! Virtual-memory arenas: physical chunks under a virtual range, mapped
//! only where live slices are — placement on mapped chunks, the chunk map,
//! its idle queue, chunk moves, stream-ordered reclamation, and `sleep` /
//! `wake`.

pub(crate) mod chunk_bits;
pub(crate) mod chunk_cache;
pub(crate) mod chunk_idle;
pub(crate) mod chunk_map;
pub(crate) mod chunk_moves;
pub(crate) mod chunk_release;
pub(crate) mod chunks;
pub(crate) mod place;
pub(crate) mod run_cover;
pub(crate) mod sleep;
pub(crate) mod stream_order;
