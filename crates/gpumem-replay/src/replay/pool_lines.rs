//! The report's pool lines, from one memory's report or summed over the
//! memories of several streams (which share one layout).

use gpumem::pools::{MemoryReport, PoolReportKind};

use crate::report::PoolLine;
use gpumem::storage::units::format_bytes;

fn pool_name(kind: &PoolReportKind) -> String {
    let name = kind.kind().name();
    match *kind {
        PoolReportKind::Sliced {
            page_size,
            max_slice_size,
            ..
        } => format!(
            "{name}({} pages, slices ≤ {})",
            format_bytes(page_size),
            format_bytes(max_slice_size)
        ),
        PoolReportKind::Exclusive { max_alloc_size } => {
            format!("{name}(≤ {})", format_bytes(max_alloc_size))
        }
        PoolReportKind::Persistent => name.to_string(),
        PoolReportKind::Arena {
            max_slice_size,
            range_size,
            ..
        } => format!(
            "{name}({} range, slices ≤ {})",
            format_bytes(range_size),
            format_bytes(max_slice_size)
        ),
    }
}

/// A report line for one pool of a memory report.
pub fn pool_lines(report: &MemoryReport) -> Vec<PoolLine> {
    report
        .pools
        .iter()
        .map(|p| PoolLine {
            pool: pool_name(&p.kind),
            pages: p.pages,
            pages_with_live_data: p.pages_with_live_data,
            bytes_in_use: p.bytes_in_use,
            bytes_reserved: p.bytes_reserved,
            peak_bytes_in_use: p.peak_bytes_in_use,
            peak_bytes_reserved: p.peak_bytes_reserved,
        })
        .collect()
}

/// Pool lines of several memories with one layout, summed pool by pool
/// (peaks are the sum of each memory's peak: an upper bound of the pool's).
pub(crate) fn merged_pool_lines(reports: &[MemoryReport]) -> Vec<PoolLine> {
    let mut lines: Vec<PoolLine> = Vec::new();
    for report in reports {
        for (i, line) in pool_lines(report).into_iter().enumerate() {
            match lines.get_mut(i) {
                Some(sum) => {
                    sum.pages += line.pages;
                    sum.pages_with_live_data += line.pages_with_live_data;
                    sum.bytes_in_use += line.bytes_in_use;
                    sum.bytes_reserved += line.bytes_reserved;
                    sum.peak_bytes_in_use += line.peak_bytes_in_use;
                    sum.peak_bytes_reserved += line.peak_bytes_reserved;
                }
                None => lines.push(line),
            }
        }
    }
    lines
}
