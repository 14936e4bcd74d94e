//! The measured-plan cycle of `gpumem plan` (its arguments and output are
//! the command's).
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
//!    A sliced pool routes no slice larger than its page (the rest go to
//!    the next pool), so the layout holds every size it claims to.
//! 4. Replay every candidate and keep the one that reserves least, so the
//!    suggestion is measured, not hoped for.
//! 5. Replay the default layout (arenas) too: a plan says so when its
//!    layout reserves more than the default.

mod dry_run;

use gpumem::config::{PoolKind, PoolLayout};
use gpumem::pools::{
    MemoryConfiguration, MemoryPoolOptions, MemoryReport, PoolReportKind, PoolType,
};
use serde::Serialize;

use crate::error::Result;
use crate::replay::{Program, ReplayReport};
pub use dry_run::max_page_for;
use dry_run::{candidate_max_page, config_text, dry_run};
use gpumem::units::GIB;

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
    /// The dry run on `sub_slices`, the paged layout a plan sizes.
    pub measured: ReplayReport,
    /// What the dry run was configured with, as `gpumem replay --config`
    /// reads it (`sub_slices`, with `max_page` when the trace needs larger
    /// pages than the facade's default).
    pub measured_config: String,
    /// Pages per pool peak of the chosen candidate (the k above).
    pub pages_per_peak: u64,
    /// Peak reserved bytes of every candidate, as (k, bytes).
    pub candidates: Vec<(u64, u64)>,
    /// The suggested dynamic pools, in routing order.
    pub suggested: Vec<SuggestedPool>,
    /// The replay on the suggested layout.
    pub verified: ReplayReport,
    /// The suggested layout as `gpumem replay --config` reads it
    /// (`sub_slices` when no pool was used, so nothing could be sized),
    /// with `max_page` only when its pages or the trace's largest
    /// allocation need more than the facade's default page limit.
    pub config: String,
    /// The default layout, as `--config` names it (`arenas`).
    pub default_config: String,
    /// The replay on the default layout: what the plan is compared with.
    pub default: ReplayReport,
    /// Whether the suggested layout's peak reserved is above the default's
    /// while the default served every allocation (then the text says to
    /// keep the default).
    pub worse_than_default: bool,
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
                // The pool routes only slices its page holds; larger ones
                // go to the next pool.
                let max_slice_size = max_slice_size.min(page);
                suggested.push(SuggestedPool {
                    kind: PoolKind::Sliced.name(),
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
                    kind: PoolKind::Exclusive.name(),
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
                    kind: PoolKind::Arena.name(),
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

/// Measures `program` on `sub_slices` (the paged layout a plan sizes) and
/// suggests a layout for a device of `capacity` bytes.
pub fn plan(source: &str, program: &Program, capacity: u64) -> Result<Plan> {
    let max_page_size = max_page_for(program, capacity);
    let measured_config = config_text(&PoolLayout::SubSlices, max_page_size);
    let (measured, backend) = dry_run(
        source,
        program,
        capacity,
        PoolLayout::SubSlices,
        max_page_size,
    )?;
    let report = backend.device().default_stream().memory_report();
    let alignment = backend.device().properties().alignment;
    drop(backend);
    // Candidates may have pages up to a quarter of the device (CubeCL's
    // rule), above the facade's default limit: sizing pages to a pool's
    // peak is the point of a plan, and the written layout carries the
    // `max_page` it needs.
    let candidate_page = candidate_max_page(capacity, max_page_size);
    let max_page = candidate_page.unwrap_or(GIB.min(capacity)) / alignment * alignment;
    let mut best: Option<(u64, Vec<SuggestedPool>, ReplayReport, String)> = None;
    let mut candidates = Vec::new();
    for split in CANDIDATE_SPLITS {
        let (suggested, config) = suggest(&report, split, max_page, alignment);
        let layout = match (suggested.is_empty(), config) {
            (false, MemoryConfiguration::Custom { pool_options }) => {
                PoolLayout::Pools(pool_options)
            }
            _ => PoolLayout::SubSlices,
        };
        let page_limit = written_max_page(&suggested, max_page_size, capacity, alignment);
        let text = config_text(&layout, page_limit);
        let (verified, _) = dry_run(source, program, capacity, layout, page_limit)?;
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
    let (default, _) = dry_run(source, program, capacity, PoolLayout::Arenas, None)?;
    // A default that failed allocations reserved less by not serving them.
    let worse_than_default =
        default.failed_allocs == 0 && verified.peak_reserved_bytes > default.peak_reserved_bytes;
    Ok(Plan {
        source: source.to_string(),
        measured,
        measured_config,
        pages_per_peak,
        candidates,
        suggested,
        verified,
        config,
        default_config: config_text(&PoolLayout::Arenas, None),
        default,
        worse_than_default,
    })
}

/// The `max_page` a layout of `suggested` pools needs written beside it:
/// its largest page or the trace's largest allocation (`needed`), when
/// that is above the facade's default page limit (`min(1 GiB, device)`);
/// else `None`, so the layout does not carry a limit it never uses.
fn written_max_page(
    suggested: &[SuggestedPool],
    needed: Option<u64>,
    capacity: u64,
    alignment: u64,
) -> Option<u64> {
    let largest_page = suggested.iter().filter_map(|p| p.page_size).max();
    let page = round_up(largest_page.max(needed).unwrap_or(0), alignment);
    (page > GIB.min(capacity)).then_some(page)
}
