//! Each row's driver time under the three named splits of the A100 table
//! (`CostSplit`, docs/storage.md): how much of each 2 MiB figure is paid
//! per call and how much per 2 MiB is unmeasured, so a comparison that
//! holds under one split only is no result.
//!
//! The row is replayed once more per split with the whole table replaced
//! (`driver_cost:a100`, `a100-per-call`, `a100-per-byte`): every sized call
//! of every row, gpumem's chunk calls and the modeled PyTorch's
//! `cuMemAlloc`, `cuMemCreate` and `cuMemUnmap` alike, is priced by it.
//! Only the driver ns/op of these replays is kept; the row's host time is
//! its first replay's.

use std::collections::BTreeMap;

use gpumem::storage::CostSplit;

use super::allocators::Allocator;
use super::rows::{Setup, run_row};
use crate::error::Result;
use crate::replay::Program;

/// `allocator`'s driver ns/op on `program` under each split, keyed by the
/// split's name.
pub(super) fn by_split(
    allocator: Allocator,
    source: &str,
    program: &Program,
    setup: &Setup,
) -> Result<BTreeMap<&'static str, f64>> {
    let mut out = BTreeMap::new();
    for split in CostSplit::ALL {
        let mut priced = setup.clone();
        priced.splits = false;
        priced.config.driver_costs = split.a100();
        let row = run_row(allocator, source, program, &priced)?;
        if let Some(ns) = row.driver_ns_per_op {
            out.insert(split.name(), ns);
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "splits_tests.rs"]
pub(crate) mod tests;
