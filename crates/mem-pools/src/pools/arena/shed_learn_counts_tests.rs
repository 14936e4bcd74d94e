//! The shed learner's counts, one rule at a time (`shed_learn.rs`);
//! the manager-level tests are in `shed_learn_tests.rs`.

use super::shed_learn::*;

const GIB: u64 = 1 << 30;

#[test]
fn bytes_created_again_past_a_thirty_second_of_those_reserved_skip_sheds() {
    let mut learn = ShedLearner::default();
    learn.on_reserve(32 * GIB, 8 * GIB);
    learn.on_release(2 * GIB, 8 * GIB);
    assert_eq!(learn.on_create(GIB), GIB);
    assert!(!learn.keeps(), "1 GiB of 32 is exactly 1/32: not past it");
    assert_eq!(learn.on_create(GIB), GIB);
    assert!(learn.keeps());
    // Nothing is left released: a third create is new memory.
    assert_eq!(learn.on_create(GIB), 0);
}

#[test]
fn what_is_remembered_as_released_is_capped_at_the_memory_held() {
    let mut learn = ShedLearner::default();
    learn.on_release(3 * GIB, 4 * GIB);
    learn.on_release(3 * GIB, 4 * GIB);
    assert_eq!(learn.on_create(8 * GIB), 4 * GIB);
}

#[test]
fn an_old_phase_fades_as_the_reserved_bytes_pass_the_horizon() {
    let mut learn = ShedLearner::default();
    learn.on_reserve(GIB, GIB);
    learn.on_release(GIB, GIB);
    learn.on_create(GIB);
    assert!(learn.keeps());
    // Reservations while sheds are skipped: the re-created count halves
    // at each horizon of them (128 × 1 GiB). It stood at 32 × its
    // threshold: four halvings still keep, the fifth puts it at 1/32,
    // not past it.
    for _ in 0..4 * 129 {
        learn.on_reserve(GIB, GIB);
    }
    assert!(learn.keeps(), "{learn:?}");
    for _ in 0..129 {
        learn.on_reserve(GIB, GIB);
    }
    assert!(!learn.keeps(), "{learn:?}");
}

#[test]
fn what_was_learned_holds_for_a_hundred_turnovers_of_the_memory_held() {
    // 1 GiB created again of 20 GiB reserved while shedding: past 1/32,
    // under it after one halving.
    let mut learn = ShedLearner::default();
    learn.on_reserve(20 * GIB, GIB);
    learn.on_release(GIB, GIB);
    learn.on_create(GIB);
    assert!(learn.keeps());
    // 100 turnovers of the 1 GiB held, all landing on mapped chunks:
    // under one horizon, so no trial shed yet (a trial this early on
    // buffers grown by reallocation sheds what the next step creates
    // again).
    for _ in 0..100 {
        learn.on_reserve(GIB, GIB);
    }
    assert!(learn.keeps(), "{learn:?}");
    for _ in 0..29 {
        learn.on_reserve(GIB, GIB);
    }
    assert!(!learn.keeps(), "{learn:?}");
}

#[test]
fn a_shed_due_at_the_live_peak_is_skipped_while_the_peak_rises() {
    let mut learn = ShedLearner::default();
    learn.on_reserve(GIB, GIB);
    assert!(learn.skips_at_peak(GIB - GIB / 200, GIB, GIB));
    assert!(!learn.skips_at_peak(GIB / 2, GIB, GIB), "a trough sheds");
}

#[test]
fn once_the_peak_holds_sheds_at_it_are_skipped_while_most_due_sheds_are() {
    let mut learn = ShedLearner::default();
    learn.skips_at_peak(GIB, GIB, GIB);
    // A turnover of the memory held without the live peak rising.
    learn.on_reserve(2 * GIB, GIB);
    assert!(learn.skips_at_peak(GIB, GIB, GIB), "1 of 1 at the peak");
    for _ in 0..2 {
        assert!(!learn.skips_at_peak(GIB / 2, GIB, GIB));
    }
    // 1 of 3 due sheds at the peak: the next one at the peak runs.
    assert!(!learn.skips_at_peak(GIB, GIB, GIB));
}

#[test]
fn resetting_the_reported_peaks_does_not_make_a_trough_look_like_the_peak() {
    let mut learn = ShedLearner::default();
    learn.on_reserve(GIB, GIB);
    assert!(learn.skips_at_peak(GIB, GIB, GIB));
    // `reset_peaks` lowered the statistics' peak to the live bytes now.
    assert!(
        !learn.skips_at_peak(GIB / 2, GIB / 2, GIB),
        "a trough sheds"
    );
}

#[test]
fn a_refused_create_runs_every_due_shed_until_the_next_horizon() {
    let mut learn = ShedLearner::default();
    learn.forget();
    assert!(learn.is_short());
    assert!(!learn.skips_at_peak(GIB, GIB, GIB));
    for _ in 0..200 {
        learn.on_reserve(GIB, GIB);
    }
    assert!(!learn.is_short());
    assert!(learn.skips_at_peak(GIB, GIB, GIB));
}

#[test]
fn reservations_while_sheds_are_skipped_do_not_dilute_what_was_learned() {
    // 1/16 of the bytes reserved were created again: sheds are skipped.
    let mut learn = ShedLearner::default();
    learn.on_reserve(16 * GIB, 8 * GIB);
    learn.on_release(GIB, 8 * GIB);
    learn.on_create(GIB);
    assert!(learn.keeps());
    // 64 GiB more reserved, all landing on chunks left mapped: no shed
    // ran, so none could show a re-creation. Counted as evidence, they
    // would put the share at 1/80 and shed again.
    for _ in 0..64 {
        learn.on_reserve(GIB, 8 * GIB);
    }
    assert!(learn.keeps(), "{learn:?}");
}

#[test]
fn a_trial_shed_after_the_learner_aged_out_is_judged_by_its_own_release() {
    let mut learn = ShedLearner::default();
    learn.on_reserve(GIB, 8 * GIB);
    learn.on_release(GIB, 8 * GIB);
    learn.on_create(GIB);
    // Aged out after five horizons of kept bytes (128 × 8 GiB each)...
    for _ in 0..5 * 1025 {
        learn.on_reserve(GIB, 8 * GIB);
    }
    assert!(!learn.keeps(), "{learn:?}");
    // ...then 400 GiB reserved on mapped chunks, no shed run.
    for _ in 0..400 {
        learn.on_reserve(GIB, 8 * GIB);
    }
    // The trial shed releases 1 GiB and the next step creates it
    // again: 1/8 of one turnover (8 GiB), past 1/32, where against the
    // 400 GiB before it would be 1/400.
    learn.on_release(GIB, 8 * GIB);
    learn.on_create(GIB);
    assert!(learn.keeps(), "{learn:?}");
}

#[test]
fn a_refused_create_forgets_what_was_learned() {
    let mut learn = ShedLearner::default();
    learn.on_release(GIB, GIB);
    learn.on_create(GIB);
    assert!(learn.keeps());
    learn.forget();
    assert!(!learn.keeps());
    assert_eq!(learn.on_create(GIB), 0);
}
