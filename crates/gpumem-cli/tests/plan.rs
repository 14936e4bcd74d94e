//! `gpumem plan`: candidates are measured and the best one is suggested.

use gpumem_cli::plan::{CANDIDATE_SPLITS, plan};
use gpumem_cli::replay::Program;
use gpumem_cli::workload::{Workload, WorkloadSpec};

#[test]
fn the_suggested_layout_is_the_measured_best_candidate_and_covers_the_peak() {
    let events = Workload::Random
        .generate(&WorkloadSpec {
            seed: 5,
            scale: 0.05,
        })
        .unwrap();
    let program = Program::compile(&events).unwrap();
    let plan = plan("random", &program, 80 << 30).unwrap();
    assert_eq!(plan.candidates.len(), CANDIDATE_SPLITS.len());
    let best = plan
        .candidates
        .iter()
        .map(|(_, bytes)| *bytes)
        .min()
        .unwrap();
    assert_eq!(plan.verified.peak_reserved_bytes, best);
    assert_eq!(plan.verified.failed_allocs, 0);
    assert!(plan.verified.peak_reserved_bytes >= plan.measured.peak_live_bytes);
    assert!(!plan.suggested.is_empty());
    for pool in &plan.suggested {
        assert!(pool.measured_peak_in_use > 0, "unused pools are dropped");
        if let Some(page) = pool.page_size {
            assert!(page * pool.pages >= pool.measured_peak_in_use);
        }
    }
}

#[test]
fn a_trace_larger_than_the_device_is_planned_on_lazy_pages_without_failures() {
    let events = Workload::Training
        .generate(&WorkloadSpec {
            seed: 5,
            scale: 0.05,
        })
        .unwrap();
    let program = Program::compile(&events).unwrap();
    let plan = plan("training", &program, 16 << 30).unwrap();
    assert!(plan.measured.peak_live_bytes > 16 << 30);
    assert_eq!(
        plan.measured.failed_allocs, 0,
        "lazy pages hold no device memory"
    );
}
