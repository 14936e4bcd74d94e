//! Relocation on a tight device: the trigger policy only acts when the
//! device is nearly full, which never happens on the 80 GiB device of the
//! fragmentation table. Here each workload replays on a simulated device
//! sized to a multiple of its own peak live bytes, relocation off, trigger
//! and eager, and the table counts the allocations that failed.
//!
//! The device is `gpumem::Device` on paged pools (see
//! [`crate::device_peer::paged_config`]): pages up to `min(1 GiB, device)`
//! unless the trace's largest allocation needs more.

use gpumem_replay::replay::ReplayReport;
use gpumem_replay::report::Relocations;
use gpumem_replay::workload::WorkloadSpec;

use crate::fragmentation::{program, run, workloads};
use crate::relocating::{Policy, RelocatingBackend};
use crate::table::{Table, human_approx, ratio};
use crate::{DEVICE_BYTES, Result};

/// One workload on one tight device with one policy.
#[derive(Debug, Clone, PartialEq)]
pub struct TightRow {
    /// Workload name.
    pub workload: &'static str,
    /// Device bytes.
    pub device: u64,
    /// Relocation policy.
    pub policy: Policy,
    /// The replay's report.
    pub report: ReplayReport,
    /// What relocation did.
    pub relocation: Relocations,
}

/// Every workload on a device of `factor` × its peak live bytes.
pub fn tight_rows(spec: &WorkloadSpec, factor: f64) -> Result<Vec<TightRow>> {
    let mut rows = Vec::new();
    for &workload in workloads() {
        let program = program(workload, spec)?;
        let mut roomy = RelocatingBackend::new(&program, DEVICE_BYTES, Policy::Off)?;
        let peak_live = run(workload.name(), &program, &mut roomy)?.peak_live_bytes;
        let device = (peak_live as f64 * factor) as u64;
        for policy in [Policy::Off, Policy::Trigger, Policy::Eager] {
            let mut backend = RelocatingBackend::new(&program, device, policy)?;
            let report = run(workload.name(), &program, &mut backend)?;
            rows.push(TightRow {
                workload: workload.name(),
                device,
                policy,
                report,
                relocation: backend.tally(),
            });
        }
    }
    Ok(rows)
}

/// The rows as Markdown.
pub fn tight_table(rows: &[TightRow]) -> String {
    let mut t = Table::new(&[
        "workload",
        "device",
        "relocation",
        "failed allocs",
        "peak ratio",
        "moved",
        "pages freed",
    ])
    .labels(3);
    for r in rows {
        t.row(vec![
            r.workload.to_string(),
            human_approx(r.device),
            r.policy.name().to_string(),
            r.report.failed_allocs.to_string(),
            ratio(r.report.fragmentation.peak),
            human_approx(r.relocation.summed.moved_bytes),
            r.relocation.summed.pages_freed.to_string(),
        ]);
    }
    t.render()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_runs_with_every_policy_on_a_tight_device() {
        let spec = WorkloadSpec {
            seed: 42,
            scale: 0.05,
        };
        let rows = tight_rows(&spec, 1.5).unwrap();
        assert_eq!(rows.len(), 3 * workloads().len());
        for r in &rows {
            assert!(
                r.report.peak_reserved_bytes <= r.device,
                "{} over its device",
                r.workload
            );
            if r.policy == Policy::Off {
                assert_eq!(r.relocation, Relocations::default());
            }
        }
        assert!(tight_table(&rows).lines().count() == rows.len() + 2);
    }
}
