//! The engine's reports: usage, the per-pool report and statistics, each
//! current the moment a handle drops (`pending.rs`), and the manager's
//! `Display` (the report's text).

use std::fmt;

use mem_storage::ComputeStorage;

use crate::engine::state::MemoryManagement;
use crate::pools::paged::pool::Pool;
use crate::report::pools::{MemoryReport, PoolReport, PoolReportKind};
use crate::report::stats::PoolStats;
use crate::report::usage::MemoryUsage;

impl<S: ComputeStorage> MemoryManagement<S> {
    /// `print_memory_usage`'s body: the report's text, logged and printed.
    pub(crate) fn print_report(&self) {
        let text = self.to_string();
        self.logger.report(&text);
        println!("{text}");
    }

    fn pool_report(&self, pool: &Pool) -> PoolReport {
        let u = &pool.usage;
        PoolReport {
            kind: match std::ptr::eq(pool, &*self.core.persistent) {
                true => PoolReportKind::Persistent,
                false => pool
                    .report_kind(|p| (self.core.arenas).cached_chunk_bytes(&self.core.tables, p)),
            },
            pages: u.pages,
            pages_unmapped: u.pages_unmapped,
            pages_with_live_data: u.live_pages,
            slices: u.slices,
            bytes_in_use: u.bytes_in_use,
            bytes_padding: u.bytes_padding,
            bytes_reserved: u.bytes_reserved,
            peak_bytes_in_use: u.peak_bytes_in_use,
            peak_bytes_reserved: u.peak_bytes_reserved,
            peak_pages: u.peak_pages,
            largest_alloc: u.largest_alloc,
            largest_free_block: pool.index.largest(&self.core.tables.slices),
        }
    }

    /// `memory_usage`'s body: the pools' counters summed (O(pools)).
    /// Drops not drained yet are subtracted (`pending.rs`).
    pub(crate) fn usage_now(&self) -> MemoryUsage {
        let usage = self
            .core
            .pools
            .iter()
            .chain(std::iter::once(&*self.core.persistent))
            .map(|p| MemoryUsage {
                number_allocs: p.usage.slices,
                bytes_in_use: p.usage.bytes_in_use,
                bytes_padding: p.usage.bytes_padding,
                bytes_reserved: p.usage.bytes_reserved,
                pages: p.usage.pages,
                pages_with_live_data: p.usage.live_pages,
            })
            .fold(MemoryUsage::default(), MemoryUsage::combine);
        match self.pending_drops() {
            Some(pending) => usage.less(
                &pending
                    .into_iter()
                    .fold(MemoryUsage::default(), MemoryUsage::combine),
            ),
            None => usage,
        }
    }

    /// `memory_report`'s body (see the module docs for the measured-plan
    /// cycle the marks serve).
    pub(crate) fn report_now(&self) -> MemoryReport {
        let mut pools: Vec<PoolReport> = self
            .core
            .pools
            .iter()
            .chain(std::iter::once(&*self.core.persistent))
            .map(|p| self.pool_report(p))
            .collect();
        for (report, pending) in pools
            .iter_mut()
            .zip(self.pending_drops().unwrap_or_default())
        {
            report.slices = report.slices.saturating_sub(pending.number_allocs);
            report.bytes_in_use = report.bytes_in_use.saturating_sub(pending.bytes_in_use);
            report.bytes_padding = report.bytes_padding.saturating_sub(pending.bytes_padding);
            report.pages_with_live_data =
                (report.pages_with_live_data).saturating_sub(pending.pages_with_live_data);
        }
        MemoryReport {
            pools,
            usage: self.memory_usage(),
        }
    }

    /// `stats`' body: the kept counters plus the two O(pools) figures.
    pub(crate) fn stats_now(&self) -> PoolStats {
        let mut stats = self.core.tables.stats;
        // Straight from each pool's free index: building the whole report
        // (a `Vec` of every pool's figures) for one maximum cost a runtime
        // that reads statistics after every call ~30 % of a reservation.
        stats.largest_free_block = self
            .core
            .pools
            .iter()
            .chain(std::iter::once(&*self.core.persistent))
            .map(|p| p.index.largest(&self.core.tables.slices))
            .max()
            .unwrap_or(0);
        stats.chunks.cached_bytes = self
            .core
            .pools
            .iter()
            .map(|p| self.core.arenas.cached_chunk_bytes(&self.core.tables, p))
            .sum();
        stats
    }
}

impl<S: ComputeStorage> fmt::Display for MemoryManagement<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ",
            if self.options.name.is_empty() {
                "MemoryManagement"
            } else {
                &self.options.name
            }
        )?;
        fmt::Display::fmt(&self.memory_report(), f)
    }
}
