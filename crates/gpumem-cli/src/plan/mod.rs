//! `gpumem plan`: the measured-plan cycle.
//!
//! 1. Dry-run the trace on the default layout over lazily carved pages of a
//!    simulated device (pages get ids but no memory, so a trace larger than
//!    the device costs nothing).
//! 2. Read each pool's high-water marks from the memory report.
//! 3. Size `MemoryConfiguration::Custom` layouts to them: the same routing
//!    (each pool keeps its size range), unused pools dropped, and pages of
//!    the pool's peak in use divided by k (k = 1, 4, 16, 64; never below
//!    the pool's largest allocation nor above the device's page limit).
//!    One big page wastes nothing on page ends but fragments inside; many
//!    small ones do the opposite, so no single k is right for every trace.
//! 4. Replay every candidate and keep the one that reserves least, so the
//!    suggestion is measured, not hoped for.

mod output;

use mem_pools::{MemoryConfiguration, MemoryPoolOptions, MemoryReport, PoolReportKind, PoolType};
use mem_storage::{DeviceResource, SimulatedResource};
use serde::Serialize;

pub use output::run_plan;

use crate::error::{CliError, Result};
use crate::layout::format_layout;
use crate::replay::{PoolBackend, Program, ReplayOptions, ReplayReport, device_properties, replay};

/// One pool of the suggested layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SuggestedPool {
    /// `sliced` or `exclusive`.
    pub kind: &'static str,
    /// Page size (sliced pools).
    pub page_size: Option<u64>,
    /// Largest allocation the pool takes (its routing bound).
    pub max_size: u64,
    /// Pages the measured peak needs.
    pub pages: u64,
    /// The pool's measured peak of requested bytes.
    pub measured_peak_in_use: u64,
}

/// What `gpumem plan` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Trace file or workload.
    pub source: String,
    /// The dry run on the default layout.
    pub measured: ReplayReport,
    /// Pages per pool peak of the chosen candidate (the k above).
    pub pages_per_peak: u64,
    /// Peak reserved bytes of every candidate, as (k, bytes).
    pub candidates: Vec<(u64, u64)>,
    /// The suggested dynamic pools, in routing order.
    pub suggested: Vec<SuggestedPool>,
    /// The replay on the suggested layout.
    pub verified: ReplayReport,
    /// The suggested layout as `gpumem replay --config` reads it
    /// (`sub-slices` when no pool was used, so nothing could be sized).
    pub config: String,
}

fn round_up(value: u64, alignment: u64) -> u64 {
    value.div_ceil(alignment).saturating_mul(alignment)
}

/// Page counts per pool peak tried by [`plan`].
pub const CANDIDATE_SPLITS: [u64; 4] = [1, 4, 16, 64];

/// Sizes a layout to the per-pool high-water marks in `report`, with pages
/// of `1 / split` of each pool's peak.
fn suggest(
    report: &MemoryReport,
    split: u64,
    max_page: u64,
    alignment: u64,
) -> (Vec<SuggestedPool>, MemoryConfiguration) {
    let mut suggested = Vec::new();
    let mut options = Vec::new();
    for pool in &report.pools {
        if pool.peak_bytes_in_use == 0 {
            continue;
        }
        match pool.kind {
            PoolReportKind::Sliced { max_slice_size, .. } => {
                let need = round_up(pool.peak_bytes_in_use, alignment);
                let floor = round_up(pool.largest_alloc.max(1), alignment);
                let page = round_up(need.div_ceil(split), alignment)
                    .max(floor)
                    .min(max_page);
                let pages = need.div_ceil(page);
                suggested.push(SuggestedPool {
                    kind: "sliced",
                    page_size: Some(page),
                    max_size: max_slice_size,
                    pages,
                    measured_peak_in_use: pool.peak_bytes_in_use,
                });
                options.push(MemoryPoolOptions {
                    pool_type: PoolType::SlicedPages {
                        page_size: page,
                        max_slice_size,
                    },
                    dealloc_period: None,
                });
            }
            PoolReportKind::Exclusive { max_alloc_size } => {
                suggested.push(SuggestedPool {
                    kind: "exclusive",
                    page_size: None,
                    max_size: max_alloc_size,
                    pages: pool.peak_pages,
                    measured_peak_in_use: pool.peak_bytes_in_use,
                });
                options.push(MemoryPoolOptions {
                    pool_type: PoolType::ExclusivePages { max_alloc_size },
                    dealloc_period: None,
                });
            }
            // An arena needs no sizing: physical memory follows live data.
            PoolReportKind::Persistent => {}
            PoolReportKind::Arena {
                max_slice_size,
                release_threshold,
                range_size,
                ..
            } => {
                suggested.push(SuggestedPool {
                    kind: "arena",
                    page_size: None,
                    max_size: max_slice_size,
                    pages: pool.peak_pages,
                    measured_peak_in_use: pool.peak_bytes_in_use,
                });
                options.push(MemoryPoolOptions {
                    pool_type: PoolType::VirtualArena {
                        max_slice_size,
                        range_size,
                        release_threshold,
                    },
                    dealloc_period: None,
                });
            }
        }
    }
    (
        suggested,
        MemoryConfiguration::Custom {
            pool_options: options,
        },
    )
}

fn dry_run(
    source: &str,
    program: &Program,
    capacity: u64,
    config: MemoryConfiguration,
) -> Result<(ReplayReport, PoolBackend<SimulatedResource>)> {
    let resource = SimulatedResource::new(capacity);
    let mut backend = PoolBackend::new("sim-lazy", resource, capacity, config, true, false);
    let run = replay(source, program, &mut backend, &ReplayOptions::default())?;
    Ok((run.report, backend))
}

/// Measures `program` and suggests a layout for a device of `capacity` bytes.
pub fn plan(source: &str, program: &Program, capacity: u64) -> Result<Plan> {
    let (measured, mut backend) =
        dry_run(source, program, capacity, MemoryConfiguration::SubSlices)?;
    let report = backend
        .memory(0)
        .map(|m| m.memory_report())
        .ok_or_else(|| CliError::Backend {
            backend: "sim-lazy",
            message: "the dry run holds no memory to report on".to_string(),
        })?;
    drop(backend);
    let alignment = SimulatedResource::new(capacity).alignment();
    let max_page = device_properties(capacity, alignment).effective_max_page();
    let mut best: Option<(u64, Vec<SuggestedPool>, ReplayReport, String)> = None;
    let mut candidates = Vec::new();
    for split in CANDIDATE_SPLITS {
        let (suggested, config) = suggest(&report, split, max_page, alignment);
        let text = if suggested.is_empty() {
            format_layout(&MemoryConfiguration::SubSlices)
        } else {
            format_layout(&config)
        };
        let (verified, _) = dry_run(source, program, capacity, config)?;
        candidates.push((split, verified.peak_reserved_bytes));
        let better = best
            .as_ref()
            .is_none_or(|(_, _, b, _)| verified.peak_reserved_bytes < b.peak_reserved_bytes);
        if better {
            best = Some((split, suggested, verified, text));
        }
    }
    let (pages_per_peak, suggested, verified, config) =
        best.expect("CANDIDATE_SPLITS is not empty, so one candidate was measured");
    Ok(Plan {
        source: source.to_string(),
        measured,
        pages_per_peak,
        candidates,
        suggested,
        verified,
        config,
    })
}
