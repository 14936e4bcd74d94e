//! What a user reads, as values: usage, per-pool reports, statistics.

mod pending;
pub(crate) mod pools;
pub(crate) mod stats;
pub(crate) mod usage;
