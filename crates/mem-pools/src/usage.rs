//! `MemoryUsage`: the four numbers every report starts from.
//!
//! `bytes_in_use` counts requested bytes, `bytes_padding` what alignment
//! added to them, and `bytes_reserved` the pages held (lazy ones included),
//! so `bytes_reserved - bytes_in_use - bytes_padding` is the free room.

use std::fmt;

/// Usage summed over every pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// Live allocations.
    pub number_allocs: u64,
    /// Requested bytes of live allocations.
    pub bytes_in_use: u64,
    /// Alignment / bucket padding of live allocations.
    pub bytes_padding: u64,
    /// Bytes of pages held (mapped or lazy).
    pub bytes_reserved: u64,
}

impl MemoryUsage {
    /// The sum of two usages.
    pub fn combine(self, other: MemoryUsage) -> MemoryUsage {
        MemoryUsage {
            number_allocs: self.number_allocs + other.number_allocs,
            bytes_in_use: self.bytes_in_use + other.bytes_in_use,
            bytes_padding: self.bytes_padding + other.bytes_padding,
            bytes_reserved: self.bytes_reserved + other.bytes_reserved,
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
            "{} allocations, {} B in use ({:.1}%), {} B padding ({:.1}%), {} B reserved",
            self.number_allocs,
            self.bytes_in_use,
            pct(self.bytes_in_use),
            self.bytes_padding,
            pct(self.bytes_padding),
            self.bytes_reserved
        )
    }
}
