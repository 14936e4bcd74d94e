//! `MemoryUsage`: the four numbers every report starts from.
//!
//! `bytes_in_use` counts requested bytes, `bytes_padding` what alignment
//! added to them, and `bytes_reserved` the pages held (lazy ones included),
//! so `bytes_reserved - bytes_in_use - bytes_padding` is the free room.
//! `pages` and `pages_with_live_data` count pages held and pages holding
//! live allocations; their difference is pages kept for reuse.

use std::fmt;

use mem_storage::units::format_bytes;

/// Usage summed over every pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct MemoryUsage {
    /// Live allocations.
    pub number_allocs: u64,
    /// Requested bytes of live allocations.
    pub bytes_in_use: u64,
    /// Alignment / bucket padding of live allocations.
    pub bytes_padding: u64,
    /// Bytes of pages held (mapped or lazy).
    pub bytes_reserved: u64,
    /// Pages held (mapped or lazy), over every pool.
    pub pages: u64,
    /// Pages holding at least one live allocation: O(1) to keep, so a
    /// runtime can check a reclaim's postcondition ("every page held holds
    /// live data": `pages == pages_with_live_data`) without resolving every
    /// handle. Drain the drop queue first (`drain_drops`).
    pub pages_with_live_data: u64,
}

impl MemoryUsage {
    /// The sum of two usages.
    pub fn combine(self, other: MemoryUsage) -> MemoryUsage {
        MemoryUsage {
            number_allocs: self.number_allocs + other.number_allocs,
            bytes_in_use: self.bytes_in_use + other.bytes_in_use,
            bytes_padding: self.bytes_padding + other.bytes_padding,
            bytes_reserved: self.bytes_reserved + other.bytes_reserved,
            pages: self.pages + other.pages,
            pages_with_live_data: self.pages_with_live_data + other.pages_with_live_data,
        }
    }
}

impl fmt::Display for MemoryUsage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |n: u64| {
            if self.bytes_reserved == 0 {
                0.0
            } else {
                100.0 * n as f64 / self.bytes_reserved as f64
            }
        };
        write!(
            f,
            "{} allocations, {} in use ({:.1}%), {} padding ({:.1}%), {} reserved",
            self.number_allocs,
            format_bytes(self.bytes_in_use),
            pct(self.bytes_in_use),
            format_bytes(self.bytes_padding),
            pct(self.bytes_padding),
            format_bytes(self.bytes_reserved)
        )
    }
}

impl MemoryUsage {
    /// `self` less `pending` (the counts of dropped, undrained allocations).
    pub(crate) fn less(self, pending: &MemoryUsage) -> MemoryUsage {
        MemoryUsage {
            number_allocs: self.number_allocs.saturating_sub(pending.number_allocs),
            bytes_in_use: self.bytes_in_use.saturating_sub(pending.bytes_in_use),
            bytes_padding: self.bytes_padding.saturating_sub(pending.bytes_padding),
            pages_with_live_data: (self.pages_with_live_data)
                .saturating_sub(pending.pages_with_live_data),
            ..self
        }
    }
}
