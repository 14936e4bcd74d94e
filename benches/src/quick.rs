//! The quick suite behind `cargo xtask bench`: the same measurements as the
//! criterion targets, timed with a plain clock (median of a few runs), in
//! seconds rather than minutes, printed as one table with ratios against
//! the peers, then the fragmentation table and the goals.
//!
//! The sequences are deterministic; the timings are not (they are medians
//! of [`QuickConfig::runs`] runs on whatever machine runs them).

use std::time::Instant;

use gpumem_replay::compare::{Allocator, run_row};
use gpumem_replay::replay::{Program, ReplayOptions, replay};
use gpumem_replay::workload::WorkloadSpec;

use crate::churn::{ChurnPeer, Steps, churn, pairs, prepare};
use crate::churn::{OffsetPeer, PoolsPeer, SystemPeer};
use crate::device_peer::compare_setup;
use crate::fragmentation::{program, workloads};
use crate::replay_peers::MallocBackend;
use crate::sizes::{ChurnPlan, SIZE_CLASSES, SizeMix};
use crate::table::{count, human};
use crate::{DEVICE_BYTES, Result};

/// How much the quick suite does.
#[derive(Debug, Clone, PartialEq)]
pub struct QuickConfig {
    /// Live-set sizes of the depth rows.
    pub depths: Vec<usize>,
    /// Timed operations per run of a churn or pair row.
    pub ops: u64,
    /// Runs per row (the median is kept).
    pub runs: usize,
    /// Workload length and seed of the replay rows.
    pub spec: WorkloadSpec,
}

impl QuickConfig {
    /// The suite `cargo xtask bench` runs (a few seconds in release).
    pub fn standard() -> Self {
        QuickConfig {
            depths: vec![1_000, 100_000, 1_000_000],
            ops: 200_000,
            runs: 5,
            spec: WorkloadSpec::default(),
        }
    }

    /// A tiny suite for tests.
    pub fn tiny() -> Self {
        QuickConfig {
            depths: vec![100, 1_000],
            ops: 1_000,
            runs: 1,
            spec: WorkloadSpec {
                seed: 42,
                scale: 0.02,
            },
        }
    }
}

/// One measured row: ns per op for each peer that ran it.
#[derive(Debug, Clone, PartialEq)]
pub struct QuickRow {
    /// What was measured.
    pub name: String,
    /// gpumem's median ns per op.
    pub gpumem: f64,
    /// offset-allocator's median ns per op.
    pub offset: Option<f64>,
    /// The system allocator's median ns per op.
    pub system: Option<f64>,
}

/// The median of `runs` timings of `f`, in ns per op (`f` returns its ops).
pub fn median_ns_per_op(runs: usize, mut f: impl FnMut() -> Result<(u64, u64)>) -> Result<f64> {
    let mut samples = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        let (ns, ops) = f()?;
        samples.push(ns as f64 / ops.max(1) as f64);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

fn timed(f: impl FnOnce() -> Result<()>, ops: u64) -> Result<(u64, u64)> {
    let start = Instant::now();
    f()?;
    Ok((start.elapsed().as_nanos() as u64, ops))
}

/// Which measurement a depth row takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Reserve+drop pairs.
    Pair,
    /// Replace one live slice.
    Churn,
}

/// Median ns/op of `measure` on `peer` holding `plan`'s live set.
pub fn depth_ns<P: ChurnPeer>(
    mut peer: P,
    plan: &ChurnPlan,
    measure: Measure,
    config: &QuickConfig,
) -> Result<f64> {
    let first = prepare(&mut peer, plan)?;
    let mut steps = Steps::new(plan, first);
    median_ns_per_op(config.runs, || {
        let ops = config.ops;
        match measure {
            Measure::Pair => timed(|| pairs(&mut peer, &mut steps, ops), ops),
            Measure::Churn => timed(|| churn(&mut peer, &mut steps, ops), ops),
        }
    })
}

/// The depth rows: pairs and churn at every depth of `config`.
pub fn depth_rows(config: &QuickConfig) -> Result<Vec<QuickRow>> {
    let mut rows = Vec::new();
    for measure in [Measure::Pair, Measure::Churn] {
        for &live in &config.depths {
            let plan = ChurnPlan::new(live, live + 4096, SizeMix::DEPTH, 0xBE7C);
            let label = match measure {
                Measure::Pair => "reserve+drop pair",
                Measure::Churn => "churn (drop one, reserve one)",
            };
            rows.push(QuickRow {
                name: format!("{label}, {} live", count(live)),
                gpumem: depth_ns(PoolsPeer::new(live), &plan, measure, config)?,
                offset: Some(depth_ns(OffsetPeer::new(live), &plan, measure, config)?),
                system: Some(depth_ns(SystemPeer::new(live), &plan, measure, config)?),
            });
        }
    }
    Ok(rows)
}

/// The size-class rows: reserve+drop pairs of one size, nothing else live.
pub fn size_rows(config: &QuickConfig) -> Result<Vec<QuickRow>> {
    let mut rows = Vec::new();
    for size in SIZE_CLASSES {
        let plan = ChurnPlan::new(0, 64, SizeMix::Fixed(size), 1);
        rows.push(QuickRow {
            name: format!("reserve+drop pair, {}", human(size)),
            gpumem: depth_ns(PoolsPeer::new(0), &plan, Measure::Pair, config)?,
            offset: Some(depth_ns(OffsetPeer::new(0), &plan, Measure::Pair, config)?),
            system: Some(depth_ns(SystemPeer::new(0), &plan, Measure::Pair, config)?),
        });
    }
    Ok(rows)
}

/// Median ns per op of `gpumem compare`'s row for `allocator` (its
/// library, on the simulated device).
fn compare_ns(program: &Program, runs: usize, allocator: Allocator) -> Result<f64> {
    let setup = compare_setup(DEVICE_BYTES);
    let mut samples = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        samples.push(run_row(allocator, "quick", program, &setup)?.ns_per_op);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

/// The replay rows: every built-in workload through `gpumem compare`'s
/// rows for gpumem's default and offset-allocator, and the system
/// allocator on host memory (compare's `system` row only counts).
pub fn replay_rows(config: &QuickConfig) -> Result<Vec<QuickRow>> {
    let mut rows = Vec::new();
    for &workload in workloads() {
        let program = program(workload, &config.spec)?;
        let runs = config.runs;
        let system = median_ns_per_op(runs, || {
            let options = ReplayOptions::default();
            let report = replay("quick", &program, &mut MallocBackend::new(), &options)?.report;
            Ok((report.wall_ns, report.ops))
        })?;
        rows.push(QuickRow {
            name: format!(
                "replay `{}` ({} ops)",
                workload.name(),
                count(program.ops.len())
            ),
            gpumem: compare_ns(&program, runs, Allocator::Gpumem)?,
            offset: Some(compare_ns(&program, runs, Allocator::OffsetAllocator)?),
            system: Some(system),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tiny_suite_times_every_peer_on_every_row() {
        let config = QuickConfig::tiny();
        let mut rows = size_rows(&config).unwrap();
        rows.extend(depth_rows(&config).unwrap());
        rows.extend(replay_rows(&config).unwrap());
        let expected = SIZE_CLASSES.len() + 2 * config.depths.len() + workloads().len();
        assert_eq!(rows.len(), expected);
        for row in &rows {
            assert!(row.gpumem > 0.0, "{}", row.name);
            assert!(row.offset.is_some_and(|v| v > 0.0), "{}", row.name);
            assert!(row.system.is_some_and(|v| v > 0.0), "{}", row.name);
        }
    }

    #[test]
    fn the_median_of_an_odd_number_of_runs_is_the_middle_one() {
        let mut samples = [(30, 1), (10, 1), (20, 1)].into_iter();
        let median = median_ns_per_op(3, || Ok(samples.next().unwrap())).unwrap();
        assert_eq!(median, 20.0);
    }
}
