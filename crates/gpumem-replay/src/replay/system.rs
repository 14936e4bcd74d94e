//! The `system` baseline: every reservation is its own device allocation and
//! every free returns it at once, as plain `cudaMalloc`/`cudaFree` would.
//!
//! It holds no memory and only counts, so reserved always equals live. It is
//! the peer that shows what pooling costs (fragmentation above 1.0) and what
//! it saves (storage allocations).

use super::backend::AllocBackend;
use crate::error::{ReplayError, Result};

/// Counting baseline with a device capacity.
#[derive(Debug, Clone)]
pub struct SystemBackend {
    capacity: u64,
    live: u64,
    peak: u64,
    allocs: u64,
}

impl SystemBackend {
    /// A device of `capacity` bytes.
    pub fn new(capacity: u64) -> Self {
        SystemBackend {
            capacity,
            live: 0,
            peak: 0,
            allocs: 0,
        }
    }
}

impl AllocBackend for SystemBackend {
    type Token = u64;

    fn name(&self) -> &'static str {
        "system"
    }

    fn reserve(&mut self, size: u64, _stream: u64) -> Result<u64> {
        match self.live.checked_add(size) {
            Some(total) if total <= self.capacity => {
                self.live = total;
                self.peak = self.peak.max(total);
                self.allocs += 1;
                Ok(size)
            }
            _ => Err(ReplayError::Backend {
                backend: "system",
                message: format!(
                    "out of memory: {size} bytes requested, {} of {} bytes free",
                    self.capacity - self.live,
                    self.capacity
                ),
            }),
        }
    }

    fn free(&mut self, token: u64) -> Result<()> {
        self.live -= token;
        Ok(())
    }

    fn live_bytes(&self) -> u64 {
        self.live
    }

    fn reserved_bytes(&self) -> u64 {
        self.live
    }

    fn peak_reserved_bytes(&self) -> u64 {
        self.peak
    }

    fn storage_allocs(&self) -> u64 {
        self.allocs
    }
}
