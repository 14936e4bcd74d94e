//! [`MemoryManagementOptions`]: what a manager is built with beside its
//! pool layout — a name, lazy pages, and the arenas' knobs (largest
//! chunk, idle share), each documented with what it costs.

/// Options that are not about the pool layout.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemoryManagementOptions {
    /// A name for logs and reports.
    pub name: String,
    /// Pages get ids but no storage memory until first dereferenced
    /// (`get_storage`, `get_resource`, `write`, `read`): a dry-run replay of a
    /// workload larger than the device costs nothing.
    pub lazy_pages: bool,
    /// The largest physical chunk an arena creates, in bytes (rounded
    /// down to the storage's granularity, at least one granule): a run of
    /// empty slots gets one chunk per this many bytes. `None`:
    /// [`crate::DEFAULT_MAX_CHUNK`]. Larger: fewer driver calls, more
    /// physical memory over live data (the frontier in docs/pools.md).
    pub arena_max_chunk: Option<u64>,
    /// Idle arena chunks (mapped, touched by no live slice) are shed once
    /// they pass 1/N of the mapped chunk bytes: unmapped and kept for
    /// reuse, so physical memory stays near live data. `None`:
    /// [`crate::IDLE_SHARE`] (16); `Some(0)`: never shed (holes keep their
    /// chunks until a cleanup or the release threshold). Smaller N: fewer
    /// unmaps and maps (driver time), more physical memory held idle (the
    /// frontier in docs/pools.md).
    pub arena_idle_share: Option<u64>,
}

impl MemoryManagementOptions {
    /// Options with a name.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }
}
