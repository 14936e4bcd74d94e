//! What a user reads, as values: usage, per-pool reports, statistics. The
//! engine fills them (`engine/report.rs`).

pub(crate) mod pools;
pub(crate) mod stats;
pub(crate) mod usage;
