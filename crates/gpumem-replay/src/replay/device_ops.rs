//! The replay's calls on [`DeviceBackend`]: reserve, free, mode, cleanup,
//! and the figures the report reads, all through `gpumem::Device`.

use gpumem::pools::PoolReport;

use super::backend::AllocBackend;
use super::device::{DeviceBackend, DeviceToken, engine_mode};
use crate::error::Result;
use crate::report::{ArenaSummary, DriverSummary, Relocations, StreamLine};
use crate::trace::Mode;
use gpumem::storage::units::format_bytes;

impl DeviceBackend {
    /// When the device budget, not the device, is what left no room for
    /// `size` bytes (a limit below the device's memory, and `size` more
    /// than the budget has left) and `refusal` does not already say so, the
    /// sentence that names it; else empty. The pools size their largest
    /// page from the budgeted memory, so their own refusal would otherwise
    /// blame the layout.
    fn budget_note(&self, size: u64, refusal: &str) -> String {
        let budget = self.device.budget();
        let limit = budget.limit();
        let total = self.device.mem_info().map_or(u64::MAX, |m| m.total);
        let left = limit.saturating_sub(budget.charged());
        if limit >= total || size <= left || refusal.contains("budget") {
            return String::new();
        }
        format!(
            "; the limit that refused is the device budget (GPUMEM_CONF budget): {} of {} \
             charged, {} left, below the device's {}",
            format_bytes(budget.charged()),
            format_bytes(limit),
            format_bytes(left),
            format_bytes(total)
        )
    }
}

impl DeviceBackend {
    /// `--relocate`: the stream's trigger before a reservation. Out of
    /// line, like [`Self::refusal`] and the pattern checks: the common
    /// reservation then keeps a small frame.
    #[inline(never)]
    fn relocate_before(&mut self, index: usize) {
        let outcome = self.streams[index].relocate_when_wanted();
        self.relocation.record(outcome);
    }

    /// `--check-patterns`: tag a new reservation (tags count reservations
    /// from 0) and write its pattern.
    #[inline(never)]
    fn with_pattern(&mut self, mut token: DeviceToken) -> Result<DeviceToken> {
        token.tag = self.next_tag;
        self.next_tag += 1;
        self.write_pattern(&token)?;
        Ok(token)
    }

    /// The replay's error for a refused reservation.
    #[cold]
    #[inline(never)]
    fn refusal(&self, size: u64, err: &gpumem::GpuMemError) -> crate::error::ReplayError {
        let text = err.to_string();
        self.error(format!("reserve: {text}{}", self.budget_note(size, &text)))
    }
}

impl AllocBackend for DeviceBackend {
    type Token = DeviceToken;

    fn name(&self) -> &'static str {
        self.name
    }

    fn reserve(&mut self, size: u64, stream: u64) -> Result<DeviceToken> {
        let index = self.stream_index(stream)?;
        if self.relocate {
            self.relocate_before(index);
        }
        let handle = match self.streams[index].reserve(size) {
            Ok(handle) => handle,
            Err(err) => return Err(self.refusal(size, &err)),
        };
        self.allocs[index] += 1;
        let token = DeviceToken {
            handle,
            tag: 0,
            stream: index,
        };
        if self.check_patterns {
            return self.with_pattern(token);
        }
        Ok(token)
    }

    /// Inlined into the replay loop: without patterns a free is the
    /// handle's drop (what a user's free is), which needs no frame of its
    /// own (plain `#[inline]` left it a call).
    #[inline(always)]
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

    fn pool_lines(&self) -> Vec<PoolReport> {
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

    fn relocation(&self) -> Option<Relocations> {
        self.relocate.then(|| self.relocation.clone())
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

    fn driver_so_far(&self) -> Option<(u64, u64)> {
        let driver = self.device.stats().driver;
        Some((driver.total_ns(), driver.total_calls()))
    }

    fn stream_lines(&self) -> Vec<StreamLine> {
        self.stream_lines_now()
    }
}
