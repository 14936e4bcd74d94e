//! A replay measures what a program gets from `gpumem::Device`: its
//! numbers equal those of a device driven here directly.

use std::collections::HashMap;

use gpumem::config::{GpumemConfig, PoolLayout};
use gpumem::prelude::*;
use gpumem_replay::replay::{Program, ReplayOptions, ReplayReport};
use gpumem_replay::setup::{BackendKind, PoolSettings, replay_on};
use gpumem_replay::trace::{Event, Mode};

/// Two streams, a persistent window, growth past the first page size, a
/// cleanup: enough to exercise pages, arenas and the device-wide peak.
fn small_trace() -> Vec<Event> {
    let mut events = vec![Event::Mode(Mode::Persistent)];
    events.push(Event::Alloc {
        id: 1,
        size: 5 * MIB,
        stream: 0,
    });
    events.push(Event::Mode(Mode::Auto));
    for round in 0..24u64 {
        let id = 10 + 2 * round;
        let stream = round % 2;
        events.push(Event::Alloc {
            id,
            size: (round % 7 + 1) * 700 * KIB,
            stream,
        });
        events.push(Event::Alloc {
            id: id + 1,
            size: (round + 1) * MIB,
            stream: 1 - stream,
        });
        if round % 3 != 2 {
            events.push(Event::Free { id: id + 1 });
        }
        if round == 12 {
            events.push(Event::Cleanup);
        }
    }
    events
}

/// The same events driven straight through a `Device` (no replay code),
/// with the handles still live at the end (as the replay's report sees
/// them: the device's counters are current, so dropping them would show).
fn drive(pools: PoolLayout, events: &[Event]) -> (Device, HashMap<u64, ManagedMemoryHandle>) {
    let device = Device::simulated(GIB)
        .pools(pools)
        .streams(2)
        .ignore_env()
        .build()
        .unwrap();
    let streams = device.streams();
    let mut live = HashMap::new();
    for event in events {
        match *event {
            Event::Alloc { id, size, stream } => {
                let handle = streams[stream as usize].reserve(size).unwrap();
                live.insert(id, handle);
            }
            Event::Free { id } => drop(live.remove(&id)),
            Event::Mode(mode) => {
                let mode = match mode {
                    Mode::Persistent => MemoryAllocationMode::Persistent,
                    Mode::Auto => MemoryAllocationMode::Auto,
                };
                streams.iter().for_each(|s| s.mode(mode));
            }
            Event::Cleanup => streams.iter().for_each(Stream::cleanup),
        }
    }
    device.drain();
    (device, live)
}

fn replay(pools: PoolLayout, events: &[Event]) -> ReplayReport {
    let mut config = GpumemConfig::default();
    config.pools = pools;
    let settings = PoolSettings {
        config,
        ..PoolSettings::default()
    };
    let program = Program::compile(events).unwrap();
    replay_on(
        BackendKind::Sim,
        GIB,
        &settings,
        "t",
        &program,
        &ReplayOptions::default(),
    )
    .unwrap()
    .report
}

#[test]
fn replay_reports_the_peak_reserved_a_device_driven_directly_reports() {
    let events = small_trace();
    for pools in [PoolLayout::Auto, PoolLayout::SubSlices] {
        let report = replay(pools.clone(), &events);
        let (device, _live) = drive(pools.clone(), &events);
        let stats = device.stats();
        assert_eq!(report.failed_allocs, 0, "{report}");
        assert_eq!(
            report.peak_reserved_bytes, stats.reserved_bytes.peak,
            "{pools:?}: {report}"
        );
        assert_eq!(report.final_reserved_bytes, stats.reserved_bytes.current);
        assert_eq!(report.storage_allocs, stats.storage_allocs);
        assert_eq!(report.peak_live_bytes, stats.requested_bytes.peak);
        assert_eq!(report.streams.len(), 2, "one line per device stream");
        assert!(report.peak_reserved_bytes >= report.peak_live_bytes);
    }
}

#[test]
fn the_default_replay_is_the_device_default_arenas_on_the_simulated_device() {
    let report = replay(GpumemConfig::default().pools, &small_trace());
    let arenas = report
        .arenas
        .clone()
        .expect("arenas report their chunk calls");
    assert!(arenas.chunks.maps > 0, "{report}");
    assert!(
        report
            .pools
            .iter()
            .any(|p| p.kind.to_string().starts_with("arena("))
    );
}
