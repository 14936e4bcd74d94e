//! `--streams per-trace`: one pool memory per trace stream over one device,
//! per-stream report lines, and relocation across the stream set.

use std::collections::HashMap;

use gpumem::Device;
use gpumem::config::{GpumemConfig, PoolLayout};
use gpumem::pools::PoolReportKind;
use gpumem::storage::units::{GIB, MIB};
use gpumem_replay::replay::{DeviceBackend, Program, ReplayOptions, ReplayRun, StreamMode, replay};
use gpumem_replay::setup::{BackendKind, PoolSettings, replay_on};
use gpumem_replay::trace::{Event, Mode};

fn alloc(id: u64, size: u64, stream: u64) -> Event {
    Event::Alloc { id, size, stream }
}

/// Paged pools with pages up to a quarter of the 1 GiB device (64 MiB
/// slices in the growing pool): the page growth these tests follow.
fn paged() -> GpumemConfig {
    let mut config = GpumemConfig::default();
    config.pools = PoolLayout::SubSlices;
    config.max_page_size = Some(GIB / 4);
    config
}

fn paged_device(streams: usize) -> Device {
    Device::simulated(GIB)
        .config(paged())
        .streams(streams)
        .ignore_env()
        .build()
        .unwrap()
}

fn run(kind: BackendKind, streams: StreamMode, relocate: bool, events: &[Event]) -> ReplayRun {
    let program = Program::compile(events).unwrap();
    let settings = PoolSettings {
        config: paged(),
        streams,
        relocate,
    };
    let options = ReplayOptions {
        timeline_points: 10_000,
        progress: None,
        find_peak_reserved_op: false,
    };
    replay_on(kind, GIB, &settings, "t", &program, &options).unwrap()
}

/// Two streams named like RMM stream pointers, each allocating and
/// freeing its own buffers, interleaved.
fn two_streams() -> Vec<Event> {
    let (a, b) = (0x7f00_0000_1000, 7);
    let mut events = Vec::new();
    for round in 0..20u64 {
        let size = (round % 5 + 1) * MIB;
        events.push(alloc(2 * round, size, a));
        events.push(alloc(2 * round + 1, 3 * size, b));
        if round % 3 == 0 {
            events.push(Event::Free { id: 2 * round });
        }
        if round % 2 == 1 {
            events.push(Event::Free { id: 2 * round - 1 });
        }
    }
    events
}

#[test]
fn each_trace_stream_gets_its_own_memory_and_its_own_report_line() {
    let events = two_streams();
    let r = run(BackendKind::Sim, StreamMode::PerTrace, false, &events).report;
    assert_eq!(r.streams.len(), 2, "{r}");
    assert_eq!(
        r.streams[0].stream, 0x7f00_0000_1000,
        "trace numbers, not indices"
    );
    assert_eq!(r.streams[1].stream, 7);

    // Per-stream live bytes, counted here without the replay code.
    let mut sizes = HashMap::new();
    let mut live: HashMap<u64, (u64, u64, u64)> = HashMap::new(); // stream -> (allocs, live, peak)
    for e in &events {
        match *e {
            Event::Alloc { id, size, stream } => {
                sizes.insert(id, (size, stream));
                let s = live.entry(stream).or_default();
                s.0 += 1;
                s.1 += size;
                s.2 = s.2.max(s.1);
            }
            Event::Free { id } => {
                let (size, stream) = sizes.remove(&id).unwrap();
                live.get_mut(&stream).unwrap().1 -= size;
            }
            _ => {}
        }
    }
    for line in &r.streams {
        let (allocs, end, peak) = live[&line.stream];
        assert_eq!(
            (line.allocs, line.final_live_bytes, line.peak_live_bytes),
            (allocs, end, peak),
            "{line:?}"
        );
        assert!(line.peak_reserved_bytes >= line.peak_live_bytes);
        assert!(line.storage_allocs > 0);
    }
    let reserved: u64 = r.streams.iter().map(|s| s.final_reserved_bytes).sum();
    assert_eq!(reserved, r.final_reserved_bytes);
    let allocs: u64 = r.streams.iter().map(|s| s.storage_allocs).sum();
    assert_eq!(allocs, r.storage_allocs);
    let text = r.to_string();
    assert!(
        text.contains("stream 0x7:") && text.contains("stream 0x7f0000001000:"),
        "{text}"
    );
}

#[test]
fn the_device_peak_covers_every_sample_and_stays_within_the_sum_of_stream_peaks() {
    let run = run(
        BackendKind::Sim,
        StreamMode::PerTrace,
        false,
        &two_streams(),
    );
    let r = &run.report;
    let sampled = run.timeline.iter().map(|s| s.reserved).max().unwrap();
    let stream_peaks: u64 = r.streams.iter().map(|s| s.peak_reserved_bytes).sum();
    assert!(r.peak_reserved_bytes >= sampled);
    assert!(r.peak_reserved_bytes <= stream_peaks);
    assert!(r.peak_reserved_bytes >= r.peak_live_bytes);
}

#[test]
fn memory_freed_on_one_stream_is_not_reused_by_another() {
    let events = vec![alloc(1, MIB, 3), Event::Free { id: 1 }, alloc(2, MIB, 4)];
    let per = run(BackendKind::Sim, StreamMode::PerTrace, false, &events).report;
    let one = run(BackendKind::Sim, StreamMode::One, false, &events).report;
    assert_eq!(per.storage_allocs, 2, "stream 4 takes its own page");
    assert_eq!(one.storage_allocs, 1, "one memory reuses the page");
    assert!(one.streams.is_empty(), "no stream lines with one memory");
}

#[test]
fn a_stream_first_used_inside_a_persistent_window_allocates_persistently() {
    let events = vec![
        alloc(1, MIB, 0),
        Event::Mode(Mode::Persistent),
        alloc(2, 5 * MIB, 9),
        Event::Mode(Mode::Auto),
        alloc(3, 5 * MIB, 9),
    ];
    let r = run(BackendKind::Sim, StreamMode::PerTrace, false, &events).report;
    let persistent = r
        .pools
        .iter()
        .find(|p| p.kind == PoolReportKind::Persistent)
        .unwrap();
    assert_eq!(persistent.bytes_in_use, 5 * MIB, "{r}");
}

/// Both streams grow their mid pool through seven page sizes on a 1 GiB
/// device (4 MiB up to the largest page, 256 MiB, for 3..255 MiB buffers),
/// leaving a long-lived allocation on each and one more on the last page,
/// then a cleanup event: with relocation, a reclaim of both memories.
fn growth_on_two_streams() -> Vec<Event> {
    let mut events = Vec::new();
    let mut size = 3 * MIB;
    for round in 0..7u64 {
        for stream in [1, 2] {
            let id = 10 * round + 2 * stream;
            events.push(alloc(id, 256 * 1024, stream));
            events.push(alloc(id + 1, size, stream));
            events.push(Event::Free { id: id + 1 });
        }
        size = size * 2 + MIB;
    }
    for stream in [1, 2] {
        events.push(alloc(100 + stream, 256 * 1024, stream));
    }
    events.push(Event::Cleanup);
    events
}

#[test]
fn relocation_runs_in_every_streams_memory_and_keeps_patterns_on_host() {
    let events = growth_on_two_streams();
    let off = run(BackendKind::Sim, StreamMode::PerTrace, false, &events).report;
    let on = run(BackendKind::Host, StreamMode::PerTrace, true, &events).report;
    assert_eq!(on.failed_allocs, 0, "{:?}", on.first_failure);
    let r = on.relocation.clone().unwrap();
    assert!(
        r.summed.moved_slices >= 2 && r.summed.pages_freed >= 2,
        "{r:?}"
    );
    for line in &on.streams {
        assert_eq!(line.final_live_bytes, 8 * 256 * 1024, "{line:?}");
        // Each memory's long-lived data now shares one current page, the
        // 256 MiB page its 255 MiB buffer grew.
        assert_eq!(line.final_reserved_bytes, 256 * MIB, "{line:?}");
    }
    assert!(on.final_reserved_bytes < off.final_reserved_bytes);
}

#[test]
fn the_device_peak_counts_what_one_stream_held_inside_a_call_on_top_of_the_others() {
    // Stream 1's 3 MiB request grows its mid pool to 4 MiB pages inside one
    // call, while stream 0 holds its own 2 MiB page. Whatever the engine
    // held during that call (its statistics peak, reset before the call)
    // counts on top of stream 0's page.
    let events = vec![
        alloc(1, MIB, 0),
        alloc(2, MIB, 1),
        Event::Free { id: 2 },
        alloc(3, 3 * MIB, 1),
    ];
    let program = Program::compile(&events).unwrap();
    let mut backend = DeviceBackend::new("sim", paged_device(2));
    let options = ReplayOptions {
        timeline_points: 100,
        progress: None,
        find_peak_reserved_op: false,
    };
    let run = replay("t", &program, &mut backend, &options).unwrap();
    assert_eq!(backend.device().stream_count(), 2);
    let in_call = backend
        .device()
        .stream(1)
        .unwrap()
        .stats()
        .reserved_bytes
        .peak;
    assert!(in_call >= 4 * MIB, "the 4 MiB page at least");
    let sampled = run.timeline.iter().map(|s| s.reserved).max().unwrap();
    assert_eq!(sampled, 6 * MIB, "between calls: 2 MiB + 4 MiB");
    assert_eq!(run.report.peak_reserved_bytes, 2 * MIB + in_call);
    assert_eq!(run.report.streams[1].peak_reserved_bytes, in_call);
}

#[test]
fn a_stream_index_the_device_lacks_is_refused_not_served_by_another_stream() {
    use gpumem_replay::replay::AllocBackend;
    let mut backend = DeviceBackend::new("sim", paged_device(2));
    let err = backend.reserve(MIB, u64::MAX).unwrap_err().to_string();
    assert!(err.contains("has no device stream"), "{err}");
    assert!(backend.reserve(MIB, 2).is_err());
    let token = backend.reserve(MIB, 1).unwrap();
    assert_eq!(
        backend
            .device()
            .stream(1)
            .unwrap()
            .stats()
            .allocation_count
            .current,
        1
    );
    backend.free(token).unwrap();
}
