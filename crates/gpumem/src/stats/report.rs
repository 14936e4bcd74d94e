//! `DeviceReport`: the device's memory as one value (`Device::memory_report`
//! builds it, in `device/report.rs`).
//!
//! What `torch.cuda.memory_summary()` prints, as data first: the device's
//! and budget's figures, the device-wide statistics and fragmentation, and
//! per stream its progress, its holds for other streams and its pools'
//! report (shape, usage and high-water marks per pool). `Display` prints it.

use std::fmt;

use mem_pools::MemoryReport;
use mem_storage::{MemInfo, VirtualMemoryStats};

use super::MemoryStats;
use crate::units::format_bytes;

/// One stream's part of a [`DeviceReport`].
#[derive(Debug, Clone, PartialEq)]
pub struct StreamReport {
    /// The stream's index.
    pub index: usize,
    /// Operations submitted.
    pub submitted: u64,
    /// Operations known complete.
    pub completed: u64,
    /// A graph capture is open on it.
    pub recording: bool,
    /// Bytes held for other streams' recorded use.
    pub held_bytes: u64,
    /// The stream's statistics.
    pub stats: MemoryStats,
    /// Its pools, in routing order, the persistent pool last.
    pub pools: MemoryReport,
}

/// The whole device's memory.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceReport {
    /// The device's name.
    pub device: String,
    /// The backend (`host`, `sim`, `cuda`).
    pub backend: &'static str,
    /// The device's own free and total bytes (below the budget), when readable.
    pub mem_info: Option<MemInfo>,
    /// The budget's limit (`None` when unlimited).
    pub budget_limit: Option<u64>,
    /// Bytes charged to the budget now.
    pub budget_charged: u64,
    /// The most bytes charged at once.
    pub budget_peak: u64,
    /// Device-wide statistics.
    pub stats: MemoryStats,
    /// Each stream.
    pub streams: Vec<StreamReport>,
    /// The device's virtual memory (arena pools), when the layout uses it:
    /// ranges, chunks, mapped bytes and their peaks, driver calls.
    pub virtual_memory: Option<VirtualMemoryStats>,
    /// Why the default layout fell back to paged pools (the backend has no
    /// virtual memory); `None` when arenas are in use or were not asked for.
    pub arena_fallback: Option<String>,
}

impl fmt::Display for DeviceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = format_bytes;
        write!(f, "device {} ({})", self.device, self.backend)?;
        if let Some(info) = self.mem_info {
            write!(f, ": {} free of {}", b(info.free), b(info.total))?;
        }
        writeln!(f)?;
        match self.budget_limit {
            Some(limit) => writeln!(
                f,
                "budget: {} charged of {} (peak {})",
                b(self.budget_charged),
                b(limit),
                b(self.budget_peak)
            )?,
            None => writeln!(
                f,
                "budget: unlimited ({} charged, peak {})",
                b(self.budget_charged),
                b(self.budget_peak)
            )?,
        }
        match (&self.virtual_memory, &self.arena_fallback) {
            (Some(vm), _) => writeln!(
                f,
                "arenas: {}, {} mapped (peak {}), {} cached; {} chunk creates, {} maps, {} unmaps, {} releases",
                address_space(vm.virtual_bytes),
                b(vm.mapped_bytes),
                b(vm.peak_mapped_bytes),
                b(self.stats.chunks.cached_bytes),
                vm.chunks_created,
                vm.maps,
                vm.unmaps,
                vm.chunks_released
            )?,
            (None, Some(reason)) => writeln!(f, "arenas: off, paged pools instead ({reason})")?,
            (None, None) => {}
        }
        let d = &self.stats.driver;
        writeln!(
            f,
            "driver: {} calls, {:.3} ms modeled; waits: {}",
            d.total_calls(),
            d.total_ns() as f64 / 1e6,
            self.stats.waits
        )?;
        let s = &self.stats;
        for (name, stat) in [
            ("allocated", s.allocated_bytes),
            ("reserved", s.reserved_bytes),
            ("active", s.active_bytes),
            ("inactive", s.inactive_bytes),
            ("requested", s.requested_bytes),
        ] {
            writeln!(
                f,
                "  {name:<9} current {:>12}  peak {:>12}  total allocated {:>12}  freed {:>12}",
                b(stat.current),
                b(stat.peak),
                b(stat.allocated),
                b(stat.freed)
            )?;
        }
        let frag = s.fragmentation();
        writeln!(
            f,
            "  {} allocations, {} pages; {} storage allocs, {} frees; {} retries, {} OOMs",
            s.allocation_count.current,
            s.segment_count.current,
            s.storage_allocs,
            s.storage_frees,
            s.num_alloc_retries,
            s.num_ooms
        )?;
        write!(
            f,
            "  fragmentation: {} reserved − {} live = {} unused; ",
            b(frag.reserved_bytes),
            b(frag.live_bytes),
            b(frag.unused_bytes),
        )?;
        if frag.free_bytes == 0 {
            writeln!(f, "no free block")?;
        } else {
            writeln!(
                f,
                "largest free block {} = {:.0}% of {} free",
                b(frag.largest_free_block),
                frag.largest_free_ratio * 100.0,
                b(frag.free_bytes)
            )?;
        }
        let sh = &s.sharing;
        if *sh != Default::default() {
            writeln!(
                f,
                "  shared outside the pools: {} exported ({}, charged to the budget), {} imported ({})",
                sh.exported_buffers,
                b(sh.exported_bytes),
                sh.imported_buffers,
                b(sh.imported_bytes)
            )?;
        }
        for st in &self.streams {
            writeln!(
                f,
                "stream {}: {} ops submitted, {} complete{}; {} held for other streams",
                st.index,
                st.submitted,
                st.completed,
                if st.recording { ", recording" } else { "" },
                b(st.held_bytes)
            )?;
            write!(f, "{}", st.pools)?;
        }
        Ok(())
    }
}

/// The arenas' address space as the report says it: each arena reserves
/// its range while it holds memory and releases it when it holds none, so
/// a device whose arenas are empty has none reserved.
fn address_space(virtual_bytes: u64) -> String {
    if virtual_bytes == 0 {
        "no address range reserved (one is reserved while an arena holds memory)".to_string()
    } else {
        format!("{} of address range reserved", format_bytes(virtual_bytes))
    }
}
