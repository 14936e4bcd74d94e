//! Properties over generated inputs: readers never panic on arbitrary bytes,
//! JSONL round-trips any event list, and replay's numbers match a model.

use std::collections::HashMap;

use gpumem_replay::replay::{Program, ReplayOptions, SystemBackend, replay};
use gpumem_replay::trace::{Event, Mode, read_jsonl, read_pytorch, read_rmm_csv, write_jsonl};
use proptest::prelude::*;

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => (0u64..16, 0u64..1 << 20, 0u64..3).prop_map(|(id, size, stream)| Event::Alloc { id, size, stream }),
        4 => (0u64..16).prop_map(|id| Event::Free { id }),
        1 => prop_oneof![Just(Mode::Persistent), Just(Mode::Auto)].prop_map(Event::Mode),
        1 => Just(Event::Cleanup),
    ]
}

/// Keeps only events a well-formed trace could hold (no double allocation).
fn well_formed(events: Vec<Event>) -> Vec<Event> {
    let mut live = std::collections::HashSet::new();
    events
        .into_iter()
        .filter(|e| match *e {
            Event::Alloc { id, .. } => live.insert(id),
            Event::Free { id } => {
                live.remove(&id);
                true
            }
            _ => true,
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn readers_return_a_value_or_an_error_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = read_jsonl(bytes.as_slice());
        let _ = read_rmm_csv(bytes.as_slice());
        let _ = read_pytorch(bytes.as_slice(), None);
    }

    #[test]
    fn text_readers_survive_mangled_valid_lines(
        events in proptest::collection::vec(event(), 1..40),
        cut in any::<prop::sample::Index>(),
        junk in "[ -~]{0,8}",
    ) {
        let mut bytes = Vec::new();
        write_jsonl(&mut bytes, &well_formed(events)).unwrap();
        let at = cut.index(bytes.len());
        let mut mangled = bytes[..at].to_vec();
        mangled.extend_from_slice(junk.as_bytes());
        mangled.extend_from_slice(&bytes[at..]);
        let _ = read_jsonl(mangled.as_slice());
        let _ = read_rmm_csv(mangled.as_slice());
    }

    #[test]
    fn the_snapshot_reader_survives_corrupted_pickles(at in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let mut bytes = include_bytes!("fixtures/snapshot.pickle").to_vec();
        let i = at.index(bytes.len());
        bytes[i] = byte;
        let _ = read_pytorch(bytes.as_slice(), None);
    }

    #[test]
    fn jsonl_round_trips_any_well_formed_trace(events in proptest::collection::vec(event(), 0..80)) {
        let events = well_formed(events);
        let mut bytes = Vec::new();
        write_jsonl(&mut bytes, &events).unwrap();
        prop_assert_eq!(read_jsonl(bytes.as_slice()).unwrap().events, events);
    }

    #[test]
    fn replay_matches_a_model_of_live_bytes_and_unknown_frees(events in proptest::collection::vec(event(), 0..120)) {
        let events = well_formed(events);
        let (mut live, mut peak, mut unknown) = (0u64, 0u64, 0u64);
        let mut sizes = HashMap::new();
        for e in &events {
            match *e {
                Event::Alloc { id, size, .. } => {
                    sizes.insert(id, size);
                    live += size;
                    peak = peak.max(live);
                }
                Event::Free { id } => match sizes.remove(&id) {
                    Some(size) => live -= size,
                    None => unknown += 1,
                },
                _ => {}
            }
        }
        let program = Program::compile(&events).unwrap();
        let mut backend = SystemBackend::new(u64::MAX);
        let r = replay("p", &program, &mut backend, &ReplayOptions::default()).unwrap().report;
        prop_assert_eq!(r.peak_live_bytes, peak);
        prop_assert_eq!(r.final_live_bytes, live);
        prop_assert_eq!(r.unknown_frees, unknown);
        prop_assert_eq!(r.ops + unknown, events.len() as u64);
    }
}
