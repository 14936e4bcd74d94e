//! `gpumem plan`: candidates are measured, the best one is suggested, and
//! its `config` replays to what the plan measured (the measured-plan cycle).

use gpumem::config::GpumemConfig;
use gpumem_replay::plan::{CANDIDATE_SPLITS, plan};
use gpumem_replay::replay::{Program, ReplayOptions};
use gpumem_replay::setup::{BackendKind, PoolSettings, load_config, replay_on};
use gpumem_replay::workload::{Workload, WorkloadSpec};

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

#[test]
fn the_plans_config_replays_to_the_peak_the_plan_verified_below_the_default_layout() {
    // `random` at this scale is one trace where sized pages beat
    // sub_slices (on `training` the facade's 1 GiB page limit already
    // leaves sub_slices within 2 % of live, and the plan says to keep it).
    let events = Workload::Random
        .generate(&WorkloadSpec {
            seed: 42,
            scale: 0.1,
        })
        .unwrap();
    let program = Program::compile(&events).unwrap();
    let plan = plan("random", &program, 80 << 30).unwrap();
    let replay = |text: &str| {
        let settings = PoolSettings {
            config: load_config(text, &GpumemConfig::default()).unwrap(),
            ..PoolSettings::default()
        };
        let options = ReplayOptions::default();
        replay_on(
            BackendKind::Sim,
            80 << 30,
            &settings,
            "t",
            &program,
            &options,
        )
        .unwrap()
        .report
    };
    let planned = replay(&plan.config);
    let default = replay(&plan.measured_config);
    assert_eq!(plan.measured_config, "sub_slices");
    assert_eq!(
        planned.peak_reserved_bytes,
        plan.verified.peak_reserved_bytes
    );
    assert_eq!(
        default.peak_reserved_bytes,
        plan.measured.peak_reserved_bytes
    );
    assert!(
        planned.peak_reserved_bytes < default.peak_reserved_bytes,
        "{} vs {}",
        planned.peak_reserved_bytes,
        default.peak_reserved_bytes
    );
    assert_eq!(planned.failed_allocs, 0);
}

#[test]
fn a_plan_for_random_holds_every_slice_it_routes_and_writes_no_page_limit_it_does_not_need() {
    // The workload of `gpumem plan --workload random`: its largest
    // allocation is 64 MiB, so the facade's default 1 GiB page limit holds
    // every page the plan sizes.
    let events = Workload::Random.generate(&WorkloadSpec::default()).unwrap();
    let program = Program::compile(&events).unwrap();
    let plan = plan("random", &program, 80 << 30).unwrap();
    for pool in &plan.suggested {
        if let Some(page) = pool.page_size {
            assert!(
                page >= pool.max_size,
                "a {page} B page for slices up to {} B",
                pool.max_size
            );
        }
    }
    assert!(!plan.config.contains("max_page"), "{}", plan.config);
    assert!(!plan.config.contains("64768/64KiB"), "{}", plan.config);
    assert_eq!(plan.verified.failed_allocs, 0);
}

#[test]
fn a_plan_compares_itself_with_the_default_and_says_when_it_reserves_more() {
    for (workload, scale) in [(Workload::Random, 0.1), (Workload::Serving, 0.1)] {
        let events = workload
            .generate(&WorkloadSpec { seed: 42, scale })
            .unwrap();
        let program = Program::compile(&events).unwrap();
        let plan = plan("t", &program, 80 << 30).unwrap();
        assert_eq!(plan.default_config, "arenas");
        assert_eq!(plan.default.failed_allocs, 0);
        assert!(plan.default.peak_reserved_bytes >= plan.default.peak_live_bytes);
        assert_eq!(
            plan.worse_than_default,
            plan.verified.peak_reserved_bytes > plan.default.peak_reserved_bytes
        );
    }
}
