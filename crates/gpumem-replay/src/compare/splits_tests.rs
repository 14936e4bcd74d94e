use gpumem::config::GpumemConfig;
use gpumem::storage::units::GIB;
use gpumem::storage::{CostSplit, DriverCall, Latency};

use super::*;
use crate::compare::{CompareBackend, compare, pytorch};
use crate::workload::{Workload, WorkloadSpec};

/// `workload` at seed 7, scale 0.2, compiled (shared with `frontier_tests.rs`).
pub(crate) fn program(workload: Workload) -> Program {
    let spec = WorkloadSpec {
        seed: 7,
        scale: 0.2,
    };
    Program::compile(&workload.generate(&spec).unwrap()).unwrap()
}

/// Sim rows on an 80 GiB device, the facade's defaults, no splits.
pub(crate) fn setup() -> Setup {
    Setup {
        backend: CompareBackend::Sim,
        capacity: 80 * GIB,
        config: GpumemConfig::default(),
        threads: false,
        splits: false,
        pytorch: pytorch::Policy::default(),
    }
}

fn driver(allocator: Allocator, program: &Program, setup: &Setup) -> f64 {
    let row = run_row(allocator, "t", program, setup).unwrap();
    row.driver_ns_per_op.unwrap()
}

#[test]
fn an_override_of_create_moves_the_pytorch_default_rows_cu_mem_alloc() {
    let program = program(Workload::Training);
    let base = setup();
    let mut dearer = setup();
    let create = dearer.config.driver_costs.latency(DriverCall::Create);
    dearer.config.driver_costs.set(
        DriverCall::Create,
        Latency::sized(create.fixed_ns * 2, create.per_granule_ns * 2),
    );
    let (before, after) = (
        driver(Allocator::Pytorch, &program, &base),
        driver(Allocator::Pytorch, &program, &dearer),
    );
    assert!(after > before, "{before} → {after}");
}

#[test]
fn the_splits_move_every_row_with_a_driver_model() {
    let program = program(Workload::Training);
    let mut split = setup();
    split.splits = true;
    let all = [
        Allocator::Gpumem,
        Allocator::Pytorch,
        Allocator::PytorchExpandable,
    ];
    let cmp = compare("t", &program, &all, &split).unwrap();
    for row in &cmp.rows {
        let by = row.driver_ns_per_op_by_split.as_ref().unwrap();
        let names: Vec<_> = by.keys().copied().collect();
        assert_eq!(names, ["a100", "a100-per-byte", "a100-per-call"]);
        assert_eq!(
            by["a100"],
            row.driver_ns_per_op.unwrap(),
            "{}",
            row.allocator
        );
        let (call, byte) = (by[CostSplit::PerCall.name()], by[CostSplit::PerByte.name()]);
        assert!(
            call < byte,
            "{}: per call {call}, per byte {byte}",
            row.allocator
        );
    }
    // The PyTorch default row pays cuMemAlloc alone: a per-call split
    // must change it.
    let pytorch = &cmp.rows[1];
    let by = pytorch.driver_ns_per_op_by_split.as_ref().unwrap();
    assert_ne!(by["a100-per-call"], by["a100"]);
}

#[test]
fn a_repeating_workload_reports_halves_that_sum_to_the_whole() {
    let program = program(Workload::Training);
    for allocator in [
        Allocator::Gpumem,
        Allocator::Pytorch,
        Allocator::PytorchExpandable,
    ] {
        let row = run_row(allocator, "t", &program, &setup()).unwrap();
        let h = row.driver_halves.expect("halves");
        let ops = program.ops.len() as u64;
        assert_eq!(h.first_half_ops + h.second_half_ops, ops);
        let total = row.driver_ns_per_op.unwrap() * ops as f64;
        let sum = (h.first_half_ns + h.second_half_ns) as f64;
        assert!((sum - total).abs() < 1.0, "{allocator:?}: {sum} vs {total}");
        assert!(h.first_half_ns > 0, "{allocator:?}: warm-up pays");
    }
}
