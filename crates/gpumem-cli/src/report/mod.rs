//! The replay report: the numbers a user compares allocators by, printed as
//! text or as one JSON object (`--json`).
//!
//! Definitions: live bytes are the sum of requested sizes of allocations
//! alive at a moment; reserved bytes are what the allocator holds from the
//! device. Fragmentation is reserved ÷ live, at the two peaks and at the end
//! (1.0 is perfect; a peak of 2.0 means half the memory held was unusable).

use std::fmt;

use serde::Serialize;

/// Reserved ÷ live ratios.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Fragmentation {
    /// Peak reserved ÷ peak live (`None` when nothing was ever live).
    pub peak: Option<f64>,
    /// Final reserved ÷ final live (`None` when nothing is live at the end).
    #[serde(rename = "final")]
    pub end: Option<f64>,
}

impl Fragmentation {
    /// Ratios from the four byte counts.
    pub fn new(peak_reserved: u64, peak_live: u64, final_reserved: u64, final_live: u64) -> Self {
        let ratio = |r: u64, l: u64| (l > 0).then(|| r as f64 / l as f64);
        Fragmentation {
            peak: ratio(peak_reserved, peak_live),
            end: ratio(final_reserved, final_live),
        }
    }
}

/// One pool's line in the report (pool backends only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PoolLine {
    /// Pool kind and shape, e.g. `sliced 256 MiB pages, slices ≤ 128 MiB`.
    pub pool: String,
    /// Pages held at the end.
    pub pages: u64,
    /// Bytes in use at the end.
    pub bytes_in_use: u64,
    /// Bytes reserved at the end.
    pub bytes_reserved: u64,
    /// High-water mark of bytes in use.
    pub peak_bytes_in_use: u64,
    /// High-water mark of bytes reserved.
    pub peak_bytes_reserved: u64,
}

/// Everything a replay measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// Trace file or workload name.
    pub source: String,
    /// Backend name.
    pub backend: String,
    /// Ops replayed (allocations, frees, mode switches, cleanups; unknown frees excluded).
    pub ops: u64,
    /// Successful allocations.
    pub allocs: u64,
    /// Frees performed.
    pub frees: u64,
    /// Peak Σ requested sizes of live allocations.
    pub peak_live_bytes: u64,
    /// Σ requested sizes live at the end.
    pub final_live_bytes: u64,
    /// Live bytes as the backend counts them at the end (should equal `final_live_bytes`).
    pub backend_live_bytes: u64,
    /// Peak bytes held from the device.
    pub peak_reserved_bytes: u64,
    /// Bytes held from the device at the end.
    pub final_reserved_bytes: u64,
    /// Reserved ÷ live ratios.
    pub fragmentation: Fragmentation,
    /// Device allocations (pages) made.
    pub storage_allocs: u64,
    /// Nanoseconds spent in the replay loop alone.
    pub wall_ns: u64,
    /// `wall_ns` ÷ `ops`.
    pub ns_per_op: f64,
    /// Frees of ids that were not live (skipped).
    pub unknown_frees: u64,
    /// Reservations the backend refused.
    pub failed_allocs: u64,
    /// The first refusal's message.
    pub first_failure: Option<String>,
    /// Per-pool lines (pool backends only).
    pub pools: Vec<PoolLine>,
}

/// Formats bytes with a binary unit (`1.50 GiB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

fn ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "n/a (nothing live)".to_string(), |r| format!("{r:.3}"))
}

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "replay of {} on backend {}", self.source, self.backend)?;
        writeln!(
            f,
            "  ops                {:>14}   ({} allocs, {} frees)",
            self.ops, self.allocs, self.frees
        )?;
        writeln!(
            f,
            "  peak live          {:>14}",
            human_bytes(self.peak_live_bytes)
        )?;
        writeln!(
            f,
            "  peak reserved      {:>14}",
            human_bytes(self.peak_reserved_bytes)
        )?;
        writeln!(
            f,
            "  final live         {:>14}",
            human_bytes(self.final_live_bytes)
        )?;
        writeln!(
            f,
            "  final reserved     {:>14}",
            human_bytes(self.final_reserved_bytes)
        )?;
        writeln!(
            f,
            "  fragmentation peak {:>14}   (reserved ÷ live; 1.000 is perfect)",
            ratio(self.fragmentation.peak)
        )?;
        writeln!(
            f,
            "  fragmentation end  {:>14}",
            ratio(self.fragmentation.end)
        )?;
        writeln!(f, "  storage allocs     {:>14}", self.storage_allocs)?;
        writeln!(
            f,
            "  replay time        {:>11.3} ms   ({:.1} ns/op)",
            self.wall_ns as f64 / 1e6,
            self.ns_per_op
        )?;
        if self.unknown_frees > 0 {
            writeln!(
                f,
                "  unknown frees      {:>14}   (frees of ids not live; skipped)",
                self.unknown_frees
            )?;
        }
        if self.failed_allocs > 0 {
            writeln!(f, "  failed allocs      {:>14}", self.failed_allocs)?;
            if let Some(first) = &self.first_failure {
                writeln!(f, "    first: {first}")?;
            }
        }
        for pool in &self.pools {
            writeln!(
                f,
                "  pool {}: {} pages, in use {} (peak {}), reserved {} (peak {})",
                pool.pool,
                pool.pages,
                human_bytes(pool.bytes_in_use),
                human_bytes(pool.peak_bytes_in_use),
                human_bytes(pool.bytes_reserved),
                human_bytes(pool.peak_bytes_reserved)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_printed_with_binary_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 << 29), "1.50 GiB");
        assert_eq!(human_bytes(80 << 30), "80.00 GiB");
    }

    #[test]
    fn fragmentation_is_undefined_when_nothing_is_live() {
        let f = Fragmentation::new(10, 0, 10, 0);
        assert_eq!(f.peak, None);
        assert_eq!(f.end, None);
        let f = Fragmentation::new(300, 100, 50, 25);
        assert_eq!(f.peak, Some(3.0));
        assert_eq!(f.end, Some(2.0));
    }
}
