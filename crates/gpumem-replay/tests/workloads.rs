//! Built-in workloads: deterministic per seed, realistic in size, modest in
//! op count, and each well-formed (no unknown frees, no double allocation).

use gpumem::storage::units::{GIB, MIB};
use gpumem_replay::ReplayError;
use gpumem_replay::replay::Program;
use gpumem_replay::trace::{Event, Mode};
use gpumem_replay::workload::{Workload, WorkloadSpec};

const ALL: [Workload; 7] = [
    Workload::Random,
    Workload::Training,
    Workload::Serving,
    Workload::Devlog,
    Workload::Growth,
    Workload::Span,
    Workload::Live,
];

fn generate(w: Workload, seed: u64, scale: f64) -> Vec<Event> {
    w.generate(&WorkloadSpec { seed, scale }).unwrap()
}

/// The size of every allocation, in order.
fn alloc_sizes(events: &[Event]) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Alloc { size, .. } => Some(*size),
            _ => None,
        })
        .collect()
}

/// Peak of Σ live sizes, computed here without the replay code.
fn peak_live(events: &[Event]) -> u64 {
    let mut sizes = std::collections::HashMap::new();
    let (mut live, mut peak) = (0u64, 0u64);
    for e in events {
        match *e {
            Event::Alloc { id, size, .. } => {
                sizes.insert(id, size);
                live += size;
                peak = peak.max(live);
            }
            Event::Free { id } => live -= sizes.remove(&id).expect("workloads free only live ids"),
            _ => {}
        }
    }
    peak
}

#[test]
fn the_same_seed_gives_the_same_events() {
    for w in ALL {
        assert_eq!(generate(w, 7, 0.2), generate(w, 7, 0.2), "{}", w.name());
    }
}

#[test]
fn different_seeds_give_different_events_where_the_workload_is_random() {
    for w in [
        Workload::Random,
        Workload::Training,
        Workload::Serving,
        Workload::Growth,
        Workload::Live,
    ] {
        assert_ne!(generate(w, 1, 0.2), generate(w, 2, 0.2), "{}", w.name());
    }
}

#[test]
fn every_workload_is_well_formed() {
    for w in ALL {
        let events = generate(w, 42, 0.3);
        let program = Program::compile(&events).unwrap();
        assert_eq!(program.unknown_frees, 0, "{}", w.name());
        assert!(
            events
                .iter()
                .all(|e| !matches!(e, Event::Alloc { size: 0, .. })),
            "{}",
            w.name()
        );
    }
}

#[test]
fn default_op_counts_are_modest_and_scale_linearly() {
    for w in [
        Workload::Random,
        Workload::Training,
        Workload::Serving,
        Workload::Growth,
    ] {
        let ops = generate(w, 42, 1.0).len();
        assert!((20_000..=200_000).contains(&ops), "{}: {ops} ops", w.name());
        let half = generate(w, 42, 0.5).len();
        let ratio = ops as f64 / half as f64;
        assert!(
            (1.6..=2.4).contains(&ratio),
            "{}: scale 1 / scale 0.5 = {ratio}",
            w.name()
        );
    }
}

#[test]
fn training_and_serving_peak_at_tens_of_gib_within_an_80_gib_device() {
    for w in [Workload::Training, Workload::Serving] {
        let peak = peak_live(&generate(w, 42, 1.0));
        assert!(
            (20 * GIB..=75 * GIB).contains(&peak),
            "{}: peak {peak}",
            w.name()
        );
    }
}

#[test]
fn training_allocates_weights_and_optimizer_state_in_a_persistent_window_and_keeps_them() {
    let events = generate(Workload::Training, 42, 0.1);
    assert_eq!(events[0], Event::Mode(Mode::Persistent));
    let end = events
        .iter()
        .position(|e| *e == Event::Mode(Mode::Auto))
        .unwrap();
    let persistent: Vec<u64> = events[1..end]
        .iter()
        .map(|e| match e {
            Event::Alloc { id, .. } => *id,
            other => panic!("only allocations inside the window, got {other:?}"),
        })
        .collect();
    assert!(persistent.len() > 100);
    let freed_later = events[end..]
        .iter()
        .any(|e| matches!(e, Event::Free { id } if persistent.contains(id)));
    assert!(
        !freed_later,
        "weights and optimizer state live for the whole run"
    );
}

#[test]
fn random_respects_its_size_bound_and_live_cap() {
    let events = generate(Workload::Random, 3, 0.5);
    assert!(
        events
            .iter()
            .all(|e| !matches!(e, Event::Alloc { size, .. } if *size > 64 * MIB))
    );
    let peak = peak_live(&events);
    assert!(peak <= 16 * GIB && peak > 15 * GIB, "peak {peak}");
    let allocs = events
        .iter()
        .filter(|e| matches!(e, Event::Alloc { .. }))
        .count();
    assert_eq!(
        allocs * 2,
        events.len(),
        "every allocation is freed by the end"
    );
}

#[test]
fn devlog_replays_the_documented_sequences() {
    let events = generate(Workload::Devlog, 0, 0.02);
    let sizes = alloc_sizes(&events);
    let mut expected = vec![16 * MIB; 8];
    expected.extend([32 * MIB; 4]);
    expected.extend([2 * MIB, MIB / 2]);
    assert_eq!(sizes, expected);
    assert_eq!(peak_live(&events), 128 * MIB);
}

#[test]
fn a_scale_that_is_not_a_positive_finite_number_is_refused() {
    for scale in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e9] {
        let err = Workload::Random
            .generate(&WorkloadSpec { seed: 1, scale })
            .unwrap_err();
        assert!(
            matches!(
                err,
                ReplayError::InvalidArgument {
                    option: "--scale",
                    ..
                }
            ),
            "{scale}: {err}"
        );
    }
}

#[test]
fn growth_reallocates_buffers_into_gib_sizes_allocating_the_new_before_freeing_the_old() {
    let trace = Workload::Growth
        .generate_trace(&WorkloadSpec {
            seed: 42,
            scale: 0.1,
        })
        .unwrap();
    let events = &trace.events;
    let largest = alloc_sizes(events).into_iter().max().unwrap();
    assert!(largest >= 2 * GIB, "largest allocation {largest}");
    // A growth: a growing buffer allocated 1.3-1.8 x the one freed right after it.
    let mut sizes = std::collections::HashMap::new();
    let mut growths = 0;
    for (i, pair) in events.windows(2).enumerate() {
        if let Event::Alloc { id, size, .. } = pair[0] {
            sizes.insert(id, size);
            let growing = trace.origins.origin_of(i) == Some("growing buffers");
            if let (Event::Free { id: old }, true) = (pair[1], growing) {
                let before = sizes[&old] as f64;
                assert!(
                    (1.3..=1.81).contains(&(size as f64 / before)),
                    "a buffer of {before} grew to {size}"
                );
                growths += 1;
            }
        }
    }
    assert_eq!(growths, 4 * 6 * 40, "four buffers, six growths, 40 steps");
    let peak = peak_live(&generate(Workload::Growth, 42, 1.0));
    assert!((10 * GIB..=75 * GIB).contains(&peak), "peak {peak}");
}

#[test]
fn span_frees_and_asks_again_one_8_gib_slice_between_two_live_neighbours() {
    let events = generate(Workload::Span, 42, 1.0);
    assert_eq!(events.len(), 3 + 2 * 2_000);
    assert_eq!(peak_live(&events), 8 * GIB + 6 * MIB);
    let sizes = alloc_sizes(&events);
    assert_eq!(sizes[..3], [3 * MIB, 8 * GIB, 3 * MIB]);
    assert!(sizes[3..].iter().all(|&s| s == 8 * GIB));
    // Each free is of the slice reserved just before it, so it is asked
    // again where it was: after the first reservation nothing is placed anew.
    for pair in events[3..].chunks(2) {
        assert!(matches!(pair, [Event::Free { .. }, Event::Alloc { .. }]));
    }
    assert_eq!(generate(Workload::Span, 42, 0.5).len(), 3 + 2 * 1_000);
}

#[test]
fn live_holds_twenty_thousand_small_slices_and_turns_them_over_one_at_a_time() {
    let events = generate(Workload::Live, 42, 1.0);
    let sizes = alloc_sizes(&events);
    assert_eq!(sizes.len(), 40_000, "20,000 held, then 20,000 turned over");
    assert!(sizes.iter().all(|s| (512..=64 << 10).contains(s)));
    // Held first, then every free is followed by the reservation that
    // replaces it: 20,000 slices stay live through the turnover.
    assert!(
        events[..20_000]
            .iter()
            .all(|e| matches!(e, Event::Alloc { .. }))
    );
    for pair in events[20_000..60_000].chunks(2) {
        assert!(matches!(pair, [Event::Free { .. }, Event::Alloc { .. }]));
    }
    let peak = peak_live(&events);
    assert!((100 * MIB..=700 * MIB).contains(&peak), "peak {peak}");
    assert_eq!(generate(Workload::Live, 42, 0.5).len(), 3 * 10_000 + 10_000);
}
