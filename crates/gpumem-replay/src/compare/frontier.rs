//! `gpumem compare --frontier`: gpumem's arena knobs swept over a grid,
//! each point replayed under the three splits of the A100 table, beside
//! the modeled PyTorch rows.
//!
//! Why: on arenas, physical memory and driver time trade against each
//! other — an idle chunk kept mapped is memory held, one shed is calls
//! later — and where the default lands depends on the trace. A user (or
//! this project's benchmarks) asking "could any setting hold less memory
//! than PyTorch *and* pay less driver time?" gets the answer for their
//! own trace, under every split of the unmeasured per-call / per-byte
//! cost, instead of one number. The default needs no knob (the engine
//! learns when a shed pays); the sweep shows what that choice costs and
//! what the static settings around it would.
//!
//! The grid: `arena_idle_share` 1/4, 1/8, 1/12, 1/16, 1/24, 1/32 and
//! never, times `arena_max_chunk` 16 to 256 MiB — 35 points, each
//! replayed three times (once per split),
//! on the simulated or host device the comparison uses. Every other
//! setting (`GPUMEM_CONF`) is kept. On the simulator points replay on as
//! many threads as the machine has cores (on the host backend one at a
//! time: each holds real memory); driver time, memory and calls are
//! exact, so the table is the same on any machine.

use std::collections::BTreeMap;

use gpumem::pools::{DEFAULT_MAX_CHUNK, IDLE_SHARE};
use gpumem::storage::CostSplit;
use serde::Serialize;

use super::CompareBackend;
use super::allocators::Allocator;
use super::rows::{Row, Setup, run_row};
use super::splits::by_split;
use crate::error::Result;
use crate::replay::Program;

/// The idle shares swept (`1/N`; 0: never shed).
pub const IDLE_SHARES: [u64; 7] = [4, 8, 12, 16, 24, 32, 0];

/// The largest chunk sizes swept, in MiB.
pub const MAX_CHUNKS_MIB: [u64; 5] = [16, 32, 64, 128, 256];

/// One setting of the arena knobs and what the trace cost under it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrontierPoint {
    /// `arena_idle_share` as N of 1/N; 0: never shed.
    pub idle_share: u64,
    /// `arena_max_chunk` in bytes.
    pub max_chunk: u64,
    /// Whether this is the engine's default setting.
    pub default: bool,
    /// Peak reserved ÷ peak live.
    pub fragmentation: Option<f64>,
    /// Priced driver calls over the whole trace (chunk creates, maps,
    /// access settings, unmaps, releases; device allocations and frees).
    pub driver_calls: Option<u64>,
    /// Driver calls in the second half of the ops.
    pub second_half_calls: Option<u64>,
    /// Driver ns/op under each split, keyed by its `driver_cost:` name.
    pub driver_ns_per_op_by_split: BTreeMap<&'static str, f64>,
    /// Allocations refused (a point that refused is not comparable).
    pub failed_allocs: u64,
    /// No other point holds no more memory and pays no more driver time
    /// under every split, and less somewhere.
    pub pareto: bool,
    /// Holds no more memory than every reference row.
    pub memory_at_most_references: bool,
    /// The splits under which the point pays no more driver time than
    /// every reference row.
    pub driver_at_most_references: Vec<&'static str>,
}

/// A row the points are held against (the modeled PyTorch allocators).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrontierReference {
    /// The row's allocator name.
    pub allocator: &'static str,
    /// Peak reserved ÷ peak live.
    pub fragmentation: Option<f64>,
    /// Priced driver calls over the whole trace.
    pub driver_calls: Option<u64>,
    /// Driver calls in the second half of the ops.
    pub second_half_calls: Option<u64>,
    /// Driver ns/op under each split.
    pub driver_ns_per_op_by_split: BTreeMap<&'static str, f64>,
}

/// The sweep of one trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Frontier {
    /// Every point of the grid, idle share major, then chunk size.
    pub points: Vec<FrontierPoint>,
    /// The rows every point is held against.
    pub references: Vec<FrontierReference>,
}

impl Frontier {
    /// Points that hold no more memory than every reference and pay no
    /// more driver time under every split: the settings that beat them
    /// on both axes whatever the driver's cost split.
    pub fn dominating(&self) -> impl Iterator<Item = &FrontierPoint> {
        self.points.iter().filter(|p| {
            p.failed_allocs == 0
                && p.memory_at_most_references
                && p.driver_at_most_references.len() == CostSplit::ALL.len()
        })
    }
}

/// Sweeps gpumem's arena knobs on `program` and holds each point against
/// the modeled PyTorch rows (with and without expandable segments).
///
/// # Errors
/// A device the facade refuses to build, or a backend failure that
/// invalidates a replay.
pub fn sweep(source: &str, program: &Program, setup: &Setup) -> Result<Frontier> {
    let references = [Allocator::Pytorch, Allocator::PytorchExpandable]
        .into_iter()
        .map(|allocator| {
            let row = run_row(allocator, source, program, setup)?;
            Ok(FrontierReference {
                allocator: allocator.name(),
                fragmentation: row.fragmentation,
                driver_calls: row
                    .driver_halves
                    .map(|h| h.first_half_calls + h.second_half_calls),
                second_half_calls: row.driver_halves.map(|h| h.second_half_calls),
                driver_ns_per_op_by_split: by_split(allocator, source, program, setup)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let grid: Vec<Knobs> = IDLE_SHARES
        .iter()
        .flat_map(|&share| MAX_CHUNKS_MIB.iter().map(move |&mib| (share, mib << 20)))
        .collect();
    let mut points = run_points(&grid, source, program, setup)?;
    judge(&mut points, &references);
    Ok(Frontier { points, references })
}

/// One grid point: idle share, largest chunk (bytes).
type Knobs = (u64, u64);

/// Replays every grid point, spread over the machine's cores.
fn run_points(
    grid: &[Knobs],
    source: &str,
    program: &Program,
    setup: &Setup,
) -> Result<Vec<FrontierPoint>> {
    // On the host backend each point holds real memory (up to the
    // device's capacity, itself capped at half of what the machine has):
    // one at a time. The simulator holds none.
    let threads = match setup.backend {
        CompareBackend::Host => 1,
        CompareBackend::Sim => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let per = grid.len().div_ceil(threads.max(1));
    let batches: Vec<Result<Vec<FrontierPoint>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = grid
            .chunks(per.max(1))
            .map(|batch| {
                scope.spawn(move || {
                    batch
                        .iter()
                        .map(|&knobs| point(knobs, source, program, setup))
                        .collect::<Result<Vec<_>>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    let mut points = Vec::with_capacity(grid.len());
    for batch in batches {
        points.extend(batch?);
    }
    Ok(points)
}

/// One grid point: gpumem's default row with the knobs set.
fn point(
    (share, chunk): Knobs,
    source: &str,
    program: &Program,
    setup: &Setup,
) -> Result<FrontierPoint> {
    let mut at = setup.clone();
    at.splits = false;
    at.threads = false;
    at.config.arena_idle_share = Some(share);
    at.config.arena_max_chunk = Some(chunk);
    let row: Row = run_row(Allocator::Gpumem, source, program, &at)?;
    Ok(FrontierPoint {
        idle_share: share,
        max_chunk: chunk,
        default: share == IDLE_SHARE && chunk == DEFAULT_MAX_CHUNK,
        fragmentation: row.fragmentation,
        driver_calls: row
            .driver_halves
            .map(|h| h.first_half_calls + h.second_half_calls),
        second_half_calls: row.driver_halves.map(|h| h.second_half_calls),
        driver_ns_per_op_by_split: by_split(Allocator::Gpumem, source, program, &at)?,
        failed_allocs: row.failed_allocs,
        pareto: false,
        memory_at_most_references: false,
        driver_at_most_references: Vec::new(),
    })
}

/// Tolerance of the comparisons (float noise, not a margin).
const EPS: f64 = 1e-9;

/// Marks each point's Pareto standing among the points and its standing
/// against the references.
fn judge(points: &mut [FrontierPoint], references: &[FrontierReference]) {
    let axes = |p: &FrontierPoint| -> Option<Vec<f64>> {
        let mut v = vec![p.fragmentation?];
        for split in CostSplit::ALL {
            v.push(*p.driver_ns_per_op_by_split.get(split.name())?);
        }
        (p.failed_allocs == 0).then_some(v)
    };
    let all: Vec<Option<Vec<f64>>> = points.iter().map(axes).collect();
    for (i, point) in points.iter_mut().enumerate() {
        let Some(mine) = &all[i] else { continue };
        point.pareto = !all.iter().flatten().any(|other| {
            other.iter().zip(mine).all(|(o, m)| *o <= m + EPS)
                && other.iter().zip(mine).any(|(o, m)| *o < m - EPS)
        });
        point.memory_at_most_references = references.iter().all(|r| {
            matches!((point.fragmentation, r.fragmentation), (Some(m), Some(f)) if m <= f + EPS)
        });
        point.driver_at_most_references = CostSplit::ALL
            .iter()
            .map(|s| s.name())
            .filter(|name| {
                let mine = point.driver_ns_per_op_by_split.get(name);
                references
                    .iter()
                    .all(|r| match (mine, r.driver_ns_per_op_by_split.get(name)) {
                        (Some(m), Some(theirs)) => *m <= theirs + EPS,
                        _ => false,
                    })
            })
            .collect();
    }
}

#[cfg(test)]
#[path = "frontier_tests.rs"]
mod tests;
