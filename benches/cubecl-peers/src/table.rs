//! The rows of one trace as a text table, and what their numbers mean.

use std::fmt;

use gpumem_replay::compare::Row;
use mem_storage::units::format_bytes;

/// One row over several runs: the first run's numbers (bytes are
/// deterministic) and every run's ns/op.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The first run's row.
    pub row: Row,
    /// ns/op of each run.
    pub ns_per_op: Vec<f64>,
    /// Whether a later run reached other peak reserved bytes (it should
    /// not: every allocator here is deterministic).
    pub bytes_differ: bool,
}

impl Measured {
    /// A row's first run.
    pub fn new(row: Row) -> Self {
        Measured {
            ns_per_op: vec![row.ns_per_op],
            row,
            bytes_differ: false,
        }
    }

    /// Another run of the same row.
    pub fn add_run(&mut self, row: &Row) {
        self.ns_per_op.push(row.ns_per_op);
        self.bytes_differ |= row.peak_reserved_bytes != self.row.peak_reserved_bytes
            || row.failed_allocs != self.row.failed_allocs;
    }

    /// The median ns/op (the upper middle of an even count).
    pub fn median(&self) -> f64 {
        let mut sorted = self.ns_per_op.clone();
        sorted.sort_by(f64::total_cmp);
        sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
    }

    fn spread(&self) -> (f64, f64) {
        let min = self.ns_per_op.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self.ns_per_op.iter().copied().fold(0.0, f64::max);
        (min, max)
    }
}

/// Every row of one trace.
#[derive(Debug, Clone)]
pub struct Table {
    /// Workload name or trace file.
    pub source: String,
    /// Ops of the trace.
    pub ops: u64,
    /// One per allocator.
    pub rows: Vec<Measured>,
}

/// What the rows' numbers are, printed once after the tables.
pub const NOTES: &str = "\
ns/op: the replay loop alone (gpumem-cli's, the same loop for every row), median of the runs; \
runs: the fastest and slowest run
reserved÷live: peak reserved ÷ peak live (1.000 is perfect)
reserved is
  gpumem: physical 2 MiB chunks mapped or cached under the arenas, plus persistent pages \
(gpumem::Device, the facade's defaults, on the simulated device)
  sub_slices: bytes of pages held from the device (gpumem::Device on pools:sub_slices, the \
paged layout a runtime without virtual memory gets, wgpu's among them)
  offset-allocator: the heap's high-water extent (it never shrinks)
  cubecl: bytes of pages held from the device by every pool (tiny, small, the arena and its \
outdated pools, persistent): the storage's bytes_allocated, frees taking effect at once; \
MemoryConfiguration::Adaptive on cubecl-cuda's device properties (max_page = device ÷ 4, \
alignment 512, max_memory = device), reserve as cubecl-server's Command::reserve does it \
(relocate when wanted, reclaim and retry once)
storage calls: gpumem: device allocations and frees plus chunk calls; sub_slices: page \
allocations and frees; offset-allocator: its \
one heap; cubecl: page allocations and frees";

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let live = self.rows.first().map_or(0, |m| m.row.peak_live_bytes);
        writeln!(
            f,
            "{}: {} ops, peak live {}, 80 GiB device",
            self.source,
            self.ops,
            format_bytes(live)
        )?;
        let width = self
            .rows
            .iter()
            .map(|m| m.row.allocator.len())
            .max()
            .unwrap_or(0)
            .max("allocator".len());
        writeln!(
            f,
            "  {:<width$}  {:>9}  {:>15}  {:>13}  {:>13}  {:>13}  {:>6}",
            "allocator",
            "ns/op",
            "runs",
            "peak reserved",
            "reserved÷live",
            "storage calls",
            "failed"
        )?;
        for m in &self.rows {
            let row = &m.row;
            let (min, max) = m.spread();
            let ratio = row
                .fragmentation
                .map_or_else(|| "-".to_string(), |r| format!("{r:.3}"));
            writeln!(
                f,
                "  {:<width$}  {:>9.1}  {:>15}  {:>13}  {ratio:>13}  {:>13}  {:>6}",
                row.allocator,
                m.median(),
                format!("{min:.1}–{max:.1}"),
                format_bytes(row.peak_reserved_bytes),
                row.storage_calls,
                row.failed_allocs,
            )?;
        }
        for m in &self.rows {
            if let Some(first) = &m.row.first_failure {
                writeln!(f, "  {}: first failure: {first}", m.row.allocator)?;
            }
            if m.bytes_differ {
                writeln!(
                    f,
                    "  {}: later runs reached other bytes than the first",
                    m.row.allocator
                )?;
            }
        }
        writeln!(f)
    }
}
