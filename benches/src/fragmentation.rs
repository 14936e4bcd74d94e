//! The fragmentation table: for every built-in workload, peak reserved ÷
//! peak live and final reserved ÷ final live, relocation off and on, with
//! `offset-allocator`'s heap extent beside them.
//!
//! GMLake's definition (utilisation = peak active ÷ peak reserved) is the
//! peak column inverted; the final column is what a long-running process
//! is left holding. A ratio of 1.00 is a perfect fit; the `system` peer
//! (one device allocation per request) is 1.00 by construction and so is
//! not listed.
//!
//! The gpumem rows are `gpumem::Device` on paged pools (`pools:sub_slices`,
//! see [`crate::device_peer`]): relocation is theirs to need; the arena
//! table measures the default, arenas.

use gpumem_replay::replay::{AllocBackend, Program, ReplayOptions, ReplayReport, replay};
use gpumem_replay::report::Relocations;
use gpumem_replay::setup::{BackendKind, PoolSettings, replay_on};
use gpumem_replay::workload::{Workload, WorkloadSpec};

use crate::device_peer::paged_config;
use crate::relocating::{Policy, RelocatingBackend};
use crate::replay_peers::OffsetBackend;
use crate::{BenchError, DEVICE_BYTES, Result};

/// Every built-in workload of the `gpumem` command, in its own order.
pub fn workloads() -> &'static [Workload] {
    &Workload::ALL
}

/// A workload generated with `spec` and compiled for replay.
pub fn program(workload: Workload, spec: &WorkloadSpec) -> Result<Program> {
    let events = workload.generate(spec)?;
    Ok(Program::compile(&events)?)
}

/// The gpumem rows of every workload: relocation policy, and whether the
/// final numbers are read after a reclaim.
pub const VARIANTS: [(Policy, bool); 4] = [
    (Policy::Off, false),
    (Policy::Off, true),
    (Policy::Trigger, true),
    (Policy::Eager, true),
];

/// The backend column of a gpumem row.
pub fn variant_name(policy: Policy, reclaim: bool) -> String {
    match (policy, reclaim) {
        (Policy::Off, false) => {
            "gpumem, relocation off (as `gpumem replay --config sub_slices`)".into()
        }
        (Policy::Off, true) => "gpumem, relocation off, cleanup at end".into(),
        (policy, true) => format!("gpumem, relocation {}, reclaim at end", policy.name()),
        (policy, false) => format!("gpumem, relocation {}", policy.name()),
    }
}

/// The backend column of the `gpumem replay --relocate` row: the command
/// itself on the same paged configuration (the trigger before
/// reservations, a reclaim at every cleanup and at the end).
pub const COMMAND_RELOCATE: &str = "`gpumem replay --relocate`";

/// One line of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct FragRow {
    /// Workload name.
    pub workload: &'static str,
    /// Backend and relocation policy.
    pub backend: String,
    /// The replay's report (bytes, ratios, allocations).
    pub report: ReplayReport,
    /// What relocation did (`None` for peers that cannot relocate).
    pub relocation: Option<Relocations>,
}

pub(crate) fn run<B: AllocBackend>(
    name: &str,
    program: &Program,
    backend: &mut B,
) -> Result<ReplayReport> {
    Ok(replay(name, program, backend, &ReplayOptions::default())?.report)
}

/// The rows of one workload: gpumem with each policy, the `gpumem` command
/// with `--relocate`, then offset-allocator.
pub fn workload_rows(workload: Workload, spec: &WorkloadSpec) -> Result<Vec<FragRow>> {
    let program = program(workload, spec)?;
    let mut rows = Vec::new();
    for (policy, reclaim) in VARIANTS {
        let mut backend =
            RelocatingBackend::new(&program, DEVICE_BYTES, policy)?.reclaim_at_end(reclaim);
        let report = run(workload.name(), &program, &mut backend)?;
        if let Some(message) = backend.settle_error() {
            return Err(BenchError::Check(format!(
                "{}: the reclaim at the end failed: {message}",
                workload.name()
            )));
        }
        rows.push(FragRow {
            workload: workload.name(),
            backend: variant_name(policy, reclaim),
            report,
            relocation: Some(backend.tally()),
        });
    }
    let settings = PoolSettings {
        config: paged_config(&program, DEVICE_BYTES),
        relocate: true,
        ..PoolSettings::default()
    };
    let options = ReplayOptions::default();
    let name = workload.name();
    let report = replay_on(
        BackendKind::Sim,
        DEVICE_BYTES,
        &settings,
        name,
        &program,
        &options,
    )?;
    let report = report.report;
    let relocation = report.relocation.clone();
    rows.push(FragRow {
        workload: workload.name(),
        backend: COMMAND_RELOCATE.into(),
        report,
        relocation,
    });
    let mut offset = OffsetBackend::new(DEVICE_BYTES, program.slots);
    rows.push(FragRow {
        workload: workload.name(),
        backend: "offset-allocator (heap extent)".into(),
        report: run(workload.name(), &program, &mut offset)?,
        relocation: None,
    });
    Ok(rows)
}

/// The whole table: every workload, every backend.
pub fn fragmentation_rows(spec: &WorkloadSpec) -> Result<Vec<FragRow>> {
    let mut rows = Vec::new();
    for &workload in workloads() {
        rows.extend(workload_rows(workload, spec)?);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> WorkloadSpec {
        WorkloadSpec {
            seed: 42,
            scale: 0.05,
        }
    }

    #[test]
    fn relocation_off_reproduces_the_gpumem_commands_numbers() {
        for &workload in workloads() {
            let program = program(workload, &small()).unwrap();
            let mut ours = RelocatingBackend::new(&program, DEVICE_BYTES, Policy::Off).unwrap();
            let ours = run("t", &program, &mut ours).unwrap();
            let settings = PoolSettings {
                config: paged_config(&program, DEVICE_BYTES),
                streams: gpumem_replay::replay::StreamMode::One,
                ..PoolSettings::default()
            };
            let options = ReplayOptions::default();
            let cli = replay_on(
                BackendKind::Sim,
                DEVICE_BYTES,
                &settings,
                "t",
                &program,
                &options,
            )
            .unwrap()
            .report;
            assert_eq!(
                ours.peak_reserved_bytes, cli.peak_reserved_bytes,
                "{workload:?}"
            );
            assert_eq!(
                ours.final_reserved_bytes, cli.final_reserved_bytes,
                "{workload:?}"
            );
            assert_eq!(ours.peak_live_bytes, cli.peak_live_bytes, "{workload:?}");
        }
    }

    #[test]
    fn eager_relocation_never_holds_more_than_no_relocation() {
        for &workload in workloads() {
            let rows = workload_rows(workload, &small()).unwrap();
            let off = &rows[0].report;
            let eager = &rows[3].report;
            assert_eq!(off.peak_live_bytes, eager.peak_live_bytes);
            assert!(
                eager.peak_reserved_bytes <= off.peak_reserved_bytes,
                "{workload:?}: eager {} > off {}",
                eager.peak_reserved_bytes,
                off.peak_reserved_bytes
            );
            assert_eq!(eager.failed_allocs, 0, "{workload:?}");
        }
    }

    #[test]
    fn every_backend_replays_every_workload_without_a_failed_allocation() {
        for row in fragmentation_rows(&small()).unwrap() {
            assert_eq!(
                row.report.failed_allocs, 0,
                "{} on {}",
                row.workload, row.backend
            );
            assert_eq!(row.report.backend_live_bytes, row.report.final_live_bytes);
            let peak = row.report.fragmentation.peak.unwrap();
            assert!(
                peak >= 1.0,
                "{} on {}: reserved below live",
                row.workload,
                row.backend
            );
        }
    }

    #[test]
    fn eager_relocation_compacts_current_pages_back_on_the_serving_workload() {
        let rows = workload_rows(Workload::Serving, &small()).unwrap();
        let compact = rows
            .iter()
            .find(|r| r.backend == variant_name(Policy::Eager, true))
            .unwrap();
        let tally = compact.relocation.as_ref().unwrap();
        assert!(tally.summed.pages_freed > 0, "{tally:?}");
        assert_eq!(compact.report.failed_allocs, 0);
        assert_eq!(
            compact.report.peak_live_bytes,
            rows[0].report.peak_live_bytes
        );
    }
}
