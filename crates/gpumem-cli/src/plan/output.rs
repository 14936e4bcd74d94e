//! `gpumem plan` output: the text summary with a paste-ready layout, or JSON.

use std::io::Write;

use gpumem::storage::units::format_bytes;
use gpumem_replay::plan::{Plan, plan};
use gpumem_replay::replay::Program;
use gpumem_replay::report::Fragmentation;
use gpumem_replay::setup::device_bytes;

use super::PlanArgs;
use crate::input::{load_input, warn_about};
use crate::{CliError, Result};

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
        "measured on {}: peak live {}, peak reserved {} ({})",
        plan.measured_config,
        format_bytes(m.peak_live_bytes),
        format_bytes(m.peak_reserved_bytes),
        ratio(&m.fragmentation)
    )?;
    for line in &m.pools {
        writeln!(
            out,
            "  {}: peak in use {}, peak reserved {}",
            line.kind,
            format_bytes(line.peak_bytes_in_use),
            format_bytes(line.peak_bytes_reserved)
        )?;
    }
    let tried: Vec<String> = plan
        .candidates
        .iter()
        .map(|(k, bytes)| format!("{k} page(s) per peak: {}", format_bytes(*bytes)))
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
            format_bytes(pool.measured_peak_in_use)
        )?;
    }
    writeln!(out, "] }}")?;
    writeln!(
        out,
        "to replay on it, add to the same `gpumem replay` line: --config '{}'",
        plan.config
    )?;
    let v = &plan.verified;
    writeln!(
        out,
        "replayed on the suggested layout: peak reserved {} ({}) against {} ({}) on sub_slices",
        format_bytes(v.peak_reserved_bytes),
        ratio(&v.fragmentation),
        format_bytes(m.peak_reserved_bytes),
        ratio(&m.fragmentation)
    )?;
    if v.peak_reserved_bytes >= m.peak_reserved_bytes {
        writeln!(out, "sized pages do not beat sub_slices on this trace")?;
    }
    write_against_default(plan, out)
}

/// The plan beside the default layout (arenas): never worse without
/// saying so.
fn write_against_default(plan: &Plan, out: &mut dyn Write) -> std::io::Result<()> {
    let (v, d) = (&plan.verified, &plan.default);
    let (planned, default) = (v.peak_reserved_bytes, d.peak_reserved_bytes);
    writeln!(
        out,
        "the default layout ({}) reserves {} at its peak ({})",
        plan.default_config,
        format_bytes(default),
        ratio(&d.fragmentation)
    )?;
    if d.failed_allocs > 0 {
        writeln!(
            out,
            "the default (arenas map real chunks) failed {} allocation(s) on this device; \
             the suggested layout, on lazily carved pages, failed {}",
            d.failed_allocs, v.failed_allocs
        )
    } else if plan.worse_than_default {
        writeln!(
            out,
            "the suggested layout reserves {} more than the default: keep the default (no --config)",
            format_bytes(planned - default)
        )
    } else if planned == default {
        writeln!(out, "the suggested layout reserves the same as the default")
    } else {
        writeln!(
            out,
            "the suggested layout reserves {} less than the default at its peak",
            format_bytes(default - planned)
        )
    }
}

/// Runs `gpumem plan`.
pub fn run_plan(args: &PlanArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
    let capacity = device_bytes(args.device_gib)?;
    let (trace, source) = load_input(&args.input)?;
    warn_about(&trace, &source, err).map_err(|e| CliError::Io {
        what: "stderr".to_string(),
        source: e,
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
