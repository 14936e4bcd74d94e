//! The atomics of the device's lock-free statistics, switched for loom's
//! under `cfg(loom)`, so the same source runs in production (std atomics)
//! and under the loom model (`cargo xtask loom`; see `device_stats_loom.rs`).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering, fence};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering, fence};
