use super::*;
use crate::compare::splits::tests::{program, setup};
use crate::workload::Workload;

/// A point with `memory` and the same driver µs/op under every split.
fn at(memory: f64, driver_us: [f64; 3]) -> FrontierPoint {
    FrontierPoint {
        idle_share: 16,
        max_chunk: 64 << 20,
        default: false,
        fragmentation: Some(memory),
        driver_calls: Some(0),
        second_half_calls: Some(0),
        driver_ns_per_op_by_split: CostSplit::ALL
            .iter()
            .zip(driver_us)
            .map(|(s, us)| (s.name(), us * 1e3))
            .collect(),
        failed_allocs: 0,
        pareto: false,
        memory_at_most_references: false,
        driver_at_most_references: Vec::new(),
    }
}

fn reference(memory: f64, driver_us: [f64; 3]) -> FrontierReference {
    let p = at(memory, driver_us);
    FrontierReference {
        allocator: "pytorch",
        fragmentation: p.fragmentation,
        driver_calls: p.driver_calls,
        second_half_calls: p.second_half_calls,
        driver_ns_per_op_by_split: p.driver_ns_per_op_by_split,
    }
}

#[test]
fn a_point_beaten_on_every_axis_is_off_the_frontier_and_ties_stay_on_it() {
    let mut points = [
        at(1.05, [2.0, 1.0, 3.0]),
        at(1.04, [2.0, 1.0, 3.0]), // beats the first on memory alone
        at(1.04, [2.0, 1.0, 3.0]), // ties the second
        at(1.10, [1.0, 0.5, 2.0]), // more memory, less time
    ];
    judge(&mut points, &[]);
    let marks: Vec<bool> = points.iter().map(|p| p.pareto).collect();
    assert_eq!(marks, [false, true, true, true]);
}

#[test]
fn the_standing_against_the_references_is_per_axis_and_per_split() {
    let mut points = [at(1.05, [2.0, 1.0, 3.0])];
    let references = [
        reference(1.08, [2.5, 0.5, 3.0]),
        reference(1.20, [2.0, 0.9, 4.0]),
    ];
    judge(&mut points, &references);
    let p = &points[0];
    assert!(p.memory_at_most_references);
    // a100 ≤ both (2.0 ≤ 2.5, 2.0); per call 1.0 over 0.5; per byte 3.0 ≤ both.
    assert_eq!(
        p.driver_at_most_references,
        [CostSplit::Half.name(), CostSplit::PerByte.name()]
    );
    let frontier = Frontier {
        points: points.to_vec(),
        references: references.to_vec(),
    };
    assert_eq!(frontier.dominating().count(), 0);
}

#[test]
fn a_point_that_refused_allocations_neither_dominates_nor_sits_on_the_frontier() {
    let mut cheap = at(1.0, [0.0, 0.0, 0.0]);
    cheap.failed_allocs = 1;
    let mut points = [cheap, at(1.05, [2.0, 1.0, 3.0])];
    judge(&mut points, &[reference(1.2, [9.0, 9.0, 9.0])]);
    assert!(!points[0].pareto, "a refusing point is not comparable");
    assert!(points[1].pareto, "nothing comparable beats the second");
    let frontier = Frontier {
        points: points.to_vec(),
        references: Vec::new(),
    };
    let winners: Vec<_> = frontier.dominating().map(|p| p.fragmentation).collect();
    assert_eq!(winners, [Some(1.05)]);
}

#[test]
fn the_sweep_replays_every_grid_point_under_every_split_and_marks_the_default_once() {
    let program = program(Workload::Devlog);
    let frontier = sweep("devlog", &program, &setup()).unwrap();
    assert_eq!(
        frontier.points.len(),
        IDLE_SHARES.len() * MAX_CHUNKS_MIB.len()
    );
    assert_eq!(frontier.points.iter().filter(|p| p.default).count(), 1);
    let default = frontier.points.iter().find(|p| p.default).unwrap();
    assert_eq!(
        (default.idle_share, default.max_chunk),
        (IDLE_SHARE, DEFAULT_MAX_CHUNK)
    );
    for p in &frontier.points {
        assert_eq!(p.driver_ns_per_op_by_split.len(), CostSplit::ALL.len());
        assert_eq!(p.failed_allocs, 0);
    }
    assert!(frontier.points.iter().any(|p| p.pareto));
    let names: Vec<_> = frontier.references.iter().map(|r| r.allocator).collect();
    assert_eq!(names, ["pytorch", "pytorch-expandable"]);
}

#[test]
fn the_default_point_is_what_the_comparisons_gpumem_row_measures() {
    let program = program(Workload::Serving);
    let setup = setup();
    let frontier = sweep("serving", &program, &setup).unwrap();
    let default = frontier.points.iter().find(|p| p.default).unwrap();
    let row = run_row(Allocator::Gpumem, "serving", &program, &setup).unwrap();
    assert_eq!(default.fragmentation, row.fragmentation);
    let by = by_split(Allocator::Gpumem, "serving", &program, &setup).unwrap();
    assert_eq!(default.driver_ns_per_op_by_split, by);
}

#[test]
fn the_table_names_the_default_the_frontier_and_the_verdict() {
    let program = program(Workload::Devlog);
    let text = sweep("devlog", &program, &setup()).unwrap().to_string();
    assert!(text.contains("35 points"), "{text}");
    assert!(!text.contains("+20 MiB"), "{text}");
    assert!(text.contains("1/16 64 MiB"), "{text}");
    assert!(text.contains("default"), "{text}");
    assert!(text.contains("never 256 MiB"), "{text}");
    assert!(text.contains("pytorch-expandable"), "{text}");
    assert!(
        text.contains("no setting holds") || text.contains("settings at or under"),
        "{text}"
    );
}
