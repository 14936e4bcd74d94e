//! The replay's calls on [`DeviceBackend`]: reserve, free, mode, cleanup,
//! and the figures the report reads, all through `gpumem::Device`.

use super::backend::AllocBackend;
use super::device::{DeviceBackend, DeviceToken, engine_mode};
use crate::error::Result;
use crate::report::{ArenaSummary, DriverSummary, PoolLine, RelocationSummary, StreamLine};
use crate::trace::Mode;

impl AllocBackend for DeviceBackend {
    type Token = DeviceToken;

    fn name(&self) -> &'static str {
        self.name
    }

    fn reserve(&mut self, size: u64, stream: u64) -> Result<DeviceToken> {
        let index = self.stream_index(stream)?;
        if self.relocate {
            let outcome = self.streams[index].relocate_when_wanted();
            self.relocation.record(outcome);
        }
        let handle = self.streams[index]
            .reserve(size)
            .map_err(|e| self.error(format!("reserve: {e}")))?;
        self.allocs[index] += 1;
        let token = DeviceToken {
            handle,
            tag: self.next_tag,
            stream: index,
        };
        self.next_tag += 1;
        if self.check_patterns {
            self.write_pattern(&token)?;
        }
        Ok(token)
    }

    fn free(&mut self, token: DeviceToken) -> Result<()> {
        if self.check_patterns {
            self.check_pattern(&token)?;
        }
        drop(token.handle);
        Ok(())
    }

    fn mode(&mut self, mode: Mode) {
        for stream in &self.streams {
            stream.mode(engine_mode(mode));
        }
    }

    /// A reclaim with relocation on, else an explicit cleanup of every stream.
    fn cleanup(&mut self) {
        self.give_back();
    }

    /// The facade's requested bytes (Σ sizes asked for, live now).
    fn live_bytes(&self) -> u64 {
        self.device.stats().requested_bytes.current
    }

    fn reserved_bytes(&self) -> u64 {
        self.device.stats().reserved_bytes.current
    }

    /// The device's own high-water mark: it sees inside every call and
    /// across streams (a page taken on one stream while others hold theirs).
    fn peak_reserved_bytes(&self) -> u64 {
        self.device.stats().reserved_bytes.peak
    }

    fn storage_allocs(&self) -> u64 {
        self.device.stats().storage_allocs
    }

    /// Drains every stream's drop queue, reclaims with relocation on, and
    /// reads the device's report once: no page is allocated by settling.
    fn settle(&mut self) {
        self.device.drain();
        if self.relocate {
            self.give_back();
        }
        self.settled = Some(self.device.memory_report());
    }

    fn pool_lines(&self) -> Vec<PoolLine> {
        self.pool_lines_now()
    }

    fn pool_reserved_now(&self) -> Vec<u64> {
        let mut sums: Vec<u64> = Vec::new();
        for stream in self.device.memory_report().streams {
            for (i, pool) in stream.pools.pools.iter().enumerate() {
                match sums.get_mut(i) {
                    Some(sum) => *sum += pool.bytes_reserved,
                    None => sums.push(pool.bytes_reserved),
                }
            }
        }
        sums
    }

    fn relocation(&self) -> Option<RelocationSummary> {
        self.relocate.then(|| self.relocation.summary())
    }

    fn arenas(&self, ops: u64) -> Option<ArenaSummary> {
        self.arena_summary(ops)
    }

    fn driver(&self, ops: u64, host_ns_per_op: f64) -> Option<DriverSummary> {
        let stats = &self.settled.as_ref()?.stats;
        Some(DriverSummary::new(
            &stats.driver,
            stats.waits,
            ops,
            host_ns_per_op,
        ))
    }

    fn stream_lines(&self) -> Vec<StreamLine> {
        self.stream_lines_now()
    }
}
