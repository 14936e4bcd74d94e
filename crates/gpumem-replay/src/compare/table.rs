//! The comparison as one table (text) or one object (`--json`).
//!
//! The peers do not hold memory the same way, so under the table the text
//! says what "reserved" and "storage calls" are for each of them, grouping
//! rows whose meaning is the same; `--json` carries the same text per row.

use std::fmt;

use serde::Serialize;

use super::rows::Row;
use gpumem::storage::units::format_bytes;

/// Every row of one `gpumem compare`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Trace file or workload name.
    pub source: String,
    /// Device of gpumem's rows (`sim`, `host`).
    pub backend: &'static str,
    /// Device bytes (gpumem's device, the offset heap, the system capacity).
    pub device_bytes: u64,
    /// Ops of the trace (allocations, frees, mode switches, cleanups).
    pub ops: u64,
    /// The `max_page` paged rows ran with when it was raised to the
    /// trace's largest allocation; `None` when the default took it.
    pub paged_max_page_bytes: Option<u64>,
    /// Streams gpumem's rows replayed on as many threads (`--threads` on a
    /// trace with more than one stream); `None` when they ran in order.
    pub threaded_streams: Option<usize>,
    /// One per allocator, in the order asked for.
    pub rows: Vec<Row>,
    /// What the reader noticed about the input (the warnings and notes
    /// printed to stderr); absent when there is nothing to say.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub input_notes: Vec<crate::trace::InputNote>,
    /// gpumem's arena knobs swept on the trace (`--frontier`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontier: Option<super::frontier::Frontier>,
}

impl Comparison {
    /// Rows that refused allocations.
    pub fn failing(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|row| row.failed_allocs > 0)
    }
}

/// `(text, names of the rows it describes)` in first-seen order.
fn grouped(rows: &[Row], text: impl Fn(&Row) -> &'static str) -> Vec<(&'static str, String)> {
    let mut groups: Vec<(&'static str, Vec<&str>)> = Vec::new();
    for row in rows {
        match groups.iter_mut().find(|(t, _)| *t == text(row)) {
            Some((_, names)) => names.push(row.allocator),
            None => groups.push((text(row), vec![row.allocator])),
        }
    }
    groups
        .into_iter()
        .map(|(text, names)| (text, names.join(", ")))
        .collect()
}

const HEADER: [&str; 9] = [
    "allocator",
    "peak live",
    "peak reserved",
    "reserved÷live",
    "storage calls",
    "ns/op",
    "driver ns/op",
    "modeled ns/op",
    "failed",
];

/// A per-op figure, or `-` for rows without a driver model.
fn per_op(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.1}"))
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "compare of {} on backend {}: {} ops, {} device",
            self.source,
            self.backend,
            self.ops,
            format_bytes(self.device_bytes)
        )?;
        let name_width = self
            .rows
            .iter()
            .map(|r| r.allocator.len())
            .chain([HEADER[0].len()])
            .max()
            .unwrap_or(0);
        let [
            name,
            live,
            reserved,
            ratio,
            calls,
            ns,
            driver,
            modeled,
            failed,
        ] = HEADER;
        writeln!(
            f,
            "  {name:<name_width$}  {live:>11}  {reserved:>13}  {ratio:>13}  {calls:>13}  {ns:>9}  \
             {driver:>12}  {modeled:>13}  {failed:>6}"
        )?;
        for row in &self.rows {
            let ratio = row
                .fragmentation
                .map_or_else(|| "-".to_string(), |r| format!("{r:.3}"));
            writeln!(
                f,
                "  {:<name_width$}  {:>11}  {:>13}  {ratio:>13}  {:>13}  {:>9.1}  {:>12}  {:>13}  {:>6}",
                row.allocator,
                format_bytes(row.peak_live_bytes),
                format_bytes(row.peak_reserved_bytes),
                row.storage_calls,
                row.ns_per_op,
                per_op(row.driver_ns_per_op),
                per_op(row.modeled_ns_per_op),
                row.failed_allocs,
            )?;
        }
        for row in &self.rows {
            if let Some(by) = &row.driver_ns_per_op_by_split {
                let splits: Vec<String> = by
                    .iter()
                    .map(|(name, ns)| format!("{name} {ns:.1}"))
                    .collect();
                let halves = row.driver_halves.map_or_else(String::new, |h| {
                    format!(
                        "; halves {:.1} then {:.1}",
                        h.first_half_ns_per_op, h.second_half_ns_per_op
                    )
                });
                writeln!(
                    f,
                    "  {}: driver ns/op {}{halves}",
                    row.allocator,
                    splits.join(", ")
                )?;
            }
        }
        writeln!(f, "reserved is")?;
        for (text, names) in grouped(&self.rows, |r| r.reserved_means) {
            writeln!(f, "  {names}: {text}")?;
        }
        writeln!(f, "storage calls are")?;
        for (text, names) in grouped(&self.rows, |r| r.storage_calls_mean) {
            writeln!(f, "  {names}: {text}")?;
        }
        writeln!(
            f,
            "ns/op times the replay loop alone, the same loop for every row; system only \
             counts, so its ns/op is the loop's own cost"
        )?;
        writeln!(
            f,
            "driver ns/op is the modeled time of the row's driver calls (gpumem's, or the \
             modeled PyTorch's; the driver cost table, docs/storage.md); modeled ns/op = ns/op \
             + driver ns/op, what a GPU user would pay"
        )?;
        if let Some(page) = self.paged_max_page_bytes {
            writeln!(
                f,
                "paged rows ran with max_page {}, the trace's largest allocation (the facade's \
                 default, min(1 GiB, device), would refuse it)",
                format_bytes(page)
            )?;
        }
        if let Some(streams) = self.threaded_streams {
            writeln!(
                f,
                "gpumem rows ran one thread per stream ({streams} threads at once): their peak \
                 live is what the interleaving reached, their ns/op the threads' wall time ÷ ops"
            )?;
        }
        for row in self.failing() {
            writeln!(
                f,
                "{}: {} allocation(s) failed (first: {})",
                row.allocator,
                row.failed_allocs,
                row.first_failure
                    .as_deref()
                    .unwrap_or("no message")
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            )?;
        }
        if let Some(frontier) = &self.frontier {
            write!(f, "{frontier}")?;
        }
        Ok(())
    }
}
