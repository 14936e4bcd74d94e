//! What a user reads, as values: usage, per-pool reports, statistics.

pub(crate) mod pools;
pub(crate) mod stats;
pub(crate) mod usage;
