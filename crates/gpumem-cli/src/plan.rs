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

use std::io::Write;

use mem_pools::{MemoryConfiguration, MemoryPoolOptions, MemoryReport, PoolReportKind, PoolType};
use mem_storage::{DeviceResource, SimulatedResource};
use serde::Serialize;

use crate::cli::{PlanArgs, load_input};
use crate::error::{CliError, Result};
use crate::replay::{PoolBackend, Program, ReplayOptions, ReplayReport, device_properties, replay};
use crate::report::{Fragmentation, human_bytes};

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
            PoolReportKind::Persistent => {}
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
    let (measured, backend) = dry_run(source, program, capacity, MemoryConfiguration::SubSlices)?;
    let report = backend.manager().memory_report();
    drop(backend);
    let alignment = SimulatedResource::new(capacity).alignment();
    let max_page = device_properties(capacity, alignment).effective_max_page();
    let mut best: Option<(u64, Vec<SuggestedPool>, ReplayReport)> = None;
    let mut candidates = Vec::new();
    for split in CANDIDATE_SPLITS {
        let (suggested, config) = suggest(&report, split, max_page, alignment);
        let (verified, _) = dry_run(source, program, capacity, config)?;
        candidates.push((split, verified.peak_reserved_bytes));
        let better = best
            .as_ref()
            .is_none_or(|(_, _, b)| verified.peak_reserved_bytes < b.peak_reserved_bytes);
        if better {
            best = Some((split, suggested, verified));
        }
    }
    let (pages_per_peak, suggested, verified) =
        best.expect("CANDIDATE_SPLITS is not empty, so one candidate was measured");
    Ok(Plan {
        source: source.to_string(),
        measured,
        pages_per_peak,
        candidates,
        suggested,
        verified,
    })
}

fn ratio(f: &Fragmentation) -> String {
    f.peak
        .map_or_else(|| "n/a".to_string(), |r| format!("×{r:.3}"))
}

fn write_text(plan: &Plan, out: &mut dyn Write) -> std::io::Result<()> {
    let m = &plan.measured;
    writeln!(
        out,
        "plan for {} (dry run on lazily carved pages)",
        plan.source
    )?;
    writeln!(
        out,
        "measured on the default layout: peak live {}, peak reserved {} ({})",
        human_bytes(m.peak_live_bytes),
        human_bytes(m.peak_reserved_bytes),
        ratio(&m.fragmentation)
    )?;
    for line in &m.pools {
        writeln!(
            out,
            "  {}: peak in use {}, peak reserved {}",
            line.pool,
            human_bytes(line.peak_bytes_in_use),
            human_bytes(line.peak_bytes_reserved)
        )?;
    }
    let tried: Vec<String> = plan
        .candidates
        .iter()
        .map(|(k, bytes)| format!("{k} page(s) per peak: {}", human_bytes(*bytes)))
        .collect();
    writeln!(out, "candidates (peak reserved): {}", tried.join("; "))?;
    writeln!(
        out,
        "suggested layout ({} page(s) per pool peak; the persistent pool is kept as is):",
        plan.pages_per_peak
    )?;
    writeln!(out, "MemoryConfiguration::Custom {{ pool_options: vec![")?;
    for pool in &plan.suggested {
        let pool_type = match pool.page_size {
            Some(page) => format!(
                "PoolType::SlicedPages {{ page_size: {page}, max_slice_size: {} }}",
                pool.max_size
            ),
            None => format!(
                "PoolType::ExclusivePages {{ max_alloc_size: {} }}",
                pool.max_size
            ),
        };
        writeln!(
            out,
            "    MemoryPoolOptions {{ pool_type: {pool_type}, dealloc_period: None }}, \
             // {} page(s) for a peak of {}",
            pool.pages,
            human_bytes(pool.measured_peak_in_use)
        )?;
    }
    writeln!(out, "] }}")?;
    let v = &plan.verified;
    writeln!(
        out,
        "replayed on the suggested layout: peak reserved {} ({}) against {} ({}) on the default layout",
        human_bytes(v.peak_reserved_bytes),
        ratio(&v.fragmentation),
        human_bytes(m.peak_reserved_bytes),
        ratio(&m.fragmentation)
    )?;
    if v.peak_reserved_bytes >= m.peak_reserved_bytes {
        writeln!(
            out,
            "the default layout is already as tight for this trace: keep it"
        )?;
    }
    Ok(())
}

/// Runs `gpumem plan`.
pub fn run_plan(args: &PlanArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
    let capacity = crate::cli::device_bytes(args.device_gib)?;
    let (trace, source) = load_input(&args.input)?;
    crate::cli::warn_about(&trace, err).map_err(|source| CliError::Io {
        what: "stderr".to_string(),
        source,
    })?;
    let program = Program::compile(&trace.events)?;
    drop(trace);
    let plan = plan(&source, &program, capacity)?;
    let written = if args.json {
        serde_json::to_string(&plan)
            .map_err(std::io::Error::from)
            .and_then(|text| writeln!(out, "{text}"))
    } else {
        write_text(&plan, out)
    };
    written.map_err(|source| CliError::Io {
        what: "stdout".to_string(),
        source,
    })
}
