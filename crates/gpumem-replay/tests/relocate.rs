//! `gpumem replay --relocate`: relocation as a runtime would run it, its
//! counters in the report, and patterns that survive the moves.

use gpumem::Device;
use gpumem::config::{GpumemConfig, PoolLayout};
use gpumem::storage::units::{GIB, MIB};
use gpumem_replay::replay::{DeviceBackend, Program, ReplayOptions, ReplayReport};
use gpumem_replay::setup::{BackendKind, PoolSettings, replay_on};
use gpumem_replay::trace::Event;
use gpumem_replay::workload::{Workload, WorkloadSpec};

/// A growth-heavy trace: each round leaves one small long-lived allocation
/// on the mid pool's current page, then asks for a size that does not fit
/// a page, so the pool grows its page size and the page holding the
/// long-lived allocation becomes outdated. A transient allocation per
/// round is freed at once. With `cleanup`, a cleanup event ends the trace.
fn growth_trace(rounds: u64, cleanup: bool) -> Vec<Event> {
    let mut events = Vec::new();
    let mut id = 0;
    let mut alloc = |events: &mut Vec<Event>, size| {
        id += 1;
        events.push(Event::Alloc {
            id,
            size,
            stream: 0,
        });
        id
    };
    let mut size = 3 * MIB;
    for _ in 0..rounds {
        alloc(&mut events, 256 * 1024);
        let transient = alloc(&mut events, size);
        events.push(Event::Free { id: transient });
        size = size * 2 + MIB;
    }
    if cleanup {
        events.push(Event::Cleanup);
    }
    events
}

/// Paged pools (relocation is theirs; arenas never have outdated pages)
/// with pages up to a quarter of the device: the growth traces below need
/// pages past the facade's default 1 GiB limit on the 80 GiB device.
fn paged(capacity: u64) -> GpumemConfig {
    let mut config = GpumemConfig::default();
    config.pools = PoolLayout::SubSlices;
    config.max_page_size = Some(capacity / 4);
    config
}

fn replay(kind: BackendKind, capacity: u64, relocate: bool, events: &[Event]) -> ReplayReport {
    let program = Program::compile(events).unwrap();
    let settings = PoolSettings {
        config: paged(capacity),
        relocate,
        ..PoolSettings::default()
    };
    replay_on(
        kind,
        capacity,
        &settings,
        "t",
        &program,
        &ReplayOptions::default(),
    )
    .unwrap()
    .report
}

#[test]
fn relocation_lets_a_pool_out_of_page_sizes_grow_again_and_reports_what_moved() {
    // Long-lived allocations keep eight page sizes alive. `Stream::reserve`
    // relocates for page sizes whenever a pool runs out of them, with or
    // without --relocate (as a program's Device does), so nothing fails
    // either way; --relocate adds the trigger, the counters and the final
    // reclaim that leaves the long-lived data on one page.
    let events = growth_trace(10, false);
    let off = replay(BackendKind::Sim, 80 * GIB, false, &events);
    assert_eq!(off.relocation, None, "no counters without --relocate");
    assert_eq!(off.failed_allocs, 0, "{:?}", off.first_failure);

    let on = replay(BackendKind::Sim, 80 * GIB, true, &events);
    assert_eq!(on.failed_allocs, 0, "{:?}", on.first_failure);
    let r = on.relocation.clone().expect("counters with --relocate");
    assert!(r.relocations > 0 && r.summed.moved_slices > 0, "{r:?}");
    assert!(
        r.summed.moved_bytes >= r.summed.moved_slices as u64 * 256 * 1024,
        "{r:?}"
    );
    assert!(
        r.summed.pages_freed > 0 && r.summed.bytes_freed > 0,
        "{r:?}"
    );
    assert_eq!((r.failed, r.last_error.clone()), (0, None));
    // After the final reclaim, the long-lived allocations share one page.
    let mid = &on.pools[1];
    assert_eq!((mid.pages, mid.bytes_in_use), (1, 10 * 256 * 1024), "{on}");
    assert_eq!(on.final_reserved_bytes, mid.bytes_reserved);
    assert!(
        on.final_reserved_bytes < off.final_reserved_bytes,
        "{on}\n{off}"
    );
    let text = on.to_string();
    assert!(
        text.contains("relocations") && text.contains("pages freed"),
        "{text}"
    );
}

/// 64 allocations of 1 MiB, then every one but one in eight freed, then
/// (with `cleanup`) a cleanup event: current pages left one-eighth full,
/// nothing outdated.
fn sparse_trace(cleanup: bool) -> Vec<Event> {
    let mut events: Vec<Event> = (1..=64)
        .map(|id| Event::Alloc {
            id,
            size: MIB,
            stream: 0,
        })
        .collect();
    events.extend(
        (1..=64)
            .filter(|id| id % 8 != 0)
            .map(|id| Event::Free { id }),
    );
    if cleanup {
        events.push(Event::Cleanup);
    }
    events
}

#[test]
fn a_reclaim_compacts_sparse_current_pages_and_never_raises_the_peak() {
    let events = sparse_trace(true);
    let off = replay(BackendKind::Sim, 80 * GIB, false, &events);
    let on = replay(BackendKind::Sim, 80 * GIB, true, &events);
    assert_eq!(on.final_live_bytes, 8 * MIB);
    let r = on.relocation.clone().expect("counters with --relocate");
    // Nothing is outdated: what moved, the reclaim's compaction moved.
    assert!(
        r.summed.moved_slices > 0 && r.summed.pages_freed > 0,
        "{r:?}"
    );
    assert!(
        on.final_reserved_bytes < off.final_reserved_bytes,
        "on {} off {}",
        on.final_reserved_bytes,
        off.final_reserved_bytes
    );
    assert_eq!(on.peak_reserved_bytes, off.peak_reserved_bytes, "{on}");
    assert!(on.to_string().contains("pages freed"));
}

#[test]
fn on_a_tight_device_pressure_compacts_before_a_reservation_that_needs_pages() {
    // The sparse layout, then one request larger than any hole: it needs
    // pages of its own, which a device that fits the first phase plus a
    // little cannot give unless the sparse pages go back first.
    let mut events = sparse_trace(false);
    let roomy = replay(BackendKind::Sim, 80 * GIB, false, &events);
    events.push(Event::Alloc {
        id: 1000,
        size: 8 * MIB,
        stream: 0,
    });
    let capacity = roomy.peak_reserved_bytes + 3 * MIB;
    let off = replay(BackendKind::Sim, capacity, false, &events);
    let on = replay(BackendKind::Sim, capacity, true, &events);
    // Without --relocate the facade's out-of-memory retry (relocate under
    // pressure, give cached pages back, retry once) serves it too, as it
    // would a program; --relocate's trigger compacts before the refusal.
    assert_eq!(off.failed_allocs, 0, "{:?}", off.first_failure);
    assert_eq!(on.failed_allocs, 0, "{:?}", on.first_failure);
    let r = on.relocation.expect("counters with --relocate");
    assert!(
        r.summed.moved_slices > 0 && r.summed.pages_freed > 0,
        "{r:?}"
    );
}

#[test]
fn compacted_patterns_read_back_on_host_memory() {
    // Allocations live at the end are checked after the final reclaim.
    let on = replay(BackendKind::Host, GIB, true, &sparse_trace(true));
    let r = on.relocation.expect("counters with --relocate");
    assert!(r.summed.moved_slices > 0, "{r:?}");
    assert_eq!(on.failed_allocs, 0, "{:?}", on.first_failure);
}

#[test]
fn patterns_written_before_a_relocation_read_back_after_it_on_host_memory() {
    // The host backend checks every allocation's pattern before its free;
    // allocations still live at the end are freed (and checked) after the
    // final reclaim. A moved allocation with wrong bytes fails the replay.
    let events = growth_trace(7, true);
    let on = replay(BackendKind::Host, GIB, true, &events);
    let r = on.relocation.expect("counters with --relocate");
    assert!(r.summed.moved_slices > 0, "{r:?}");
    assert_eq!(on.failed_allocs, 0, "{:?}", on.first_failure);
}

#[test]
fn after_the_final_reclaim_nothing_empty_is_held() {
    for workload in [Workload::Serving, Workload::Training, Workload::Devlog] {
        let events = workload
            .generate(&WorkloadSpec {
                seed: 3,
                scale: 0.05,
            })
            .unwrap();
        let off = replay(BackendKind::Sim, 80 * GIB, false, &events);
        let on = replay(BackendKind::Sim, 80 * GIB, true, &events);
        assert_eq!(on.peak_live_bytes, off.peak_live_bytes, "{workload:?}");
        assert!(on.final_reserved_bytes <= off.final_reserved_bytes);
        assert!(on.final_reserved_bytes >= on.final_live_bytes);
        let held: u64 = on.pools.iter().map(|p| p.bytes_reserved).sum();
        let used: u64 = on.pools.iter().map(|p| p.bytes_in_use).sum();
        assert_eq!(held, on.final_reserved_bytes, "{workload:?}");
        if used == 0 {
            assert_eq!(held, 0, "{workload:?}: every empty page went back");
        }
    }
}

#[test]
fn under_memory_pressure_the_trigger_relocates_before_a_reservation_not_only_at_the_end() {
    // On a 1 GiB device (256 MiB pages at most), five growths leave five
    // outdated pages (2..32 MiB) with a long-lived allocation each; big
    // buffers then grow the pages to 201 MiB (the next whole MiB above
    // 200 MiB) and bring the device within a page of full, so the trigger
    // moves the long-lived allocations into the MiB each big page keeps
    // beside its buffer before the next reservation, and the outdated pages
    // go back mid-run.
    let mut events = growth_trace(5, false);
    for (id, size) in [
        (100, 200 * MIB),
        (101, 200 * MIB),
        (102, 200 * MIB),
        (103, 65 * MIB),
        (104, 1024),
    ] {
        events.push(Event::Alloc {
            id,
            size,
            stream: 0,
        });
    }
    let program = Program::compile(&events).unwrap();
    let timeline = |relocate| {
        let settings = PoolSettings {
            config: paged(GIB),
            relocate,
            ..PoolSettings::default()
        };
        let options = ReplayOptions {
            timeline_points: 1000,
            progress: None,
            find_peak_reserved_op: false,
        };
        let run = replay_on(BackendKind::Sim, GIB, &settings, "t", &program, &options).unwrap();
        (run.timeline.last().unwrap().reserved, run.report)
    };
    let (off_last, off) = timeline(false);
    let (on_last, on) = timeline(true);
    assert!(
        on_last < off_last,
        "before the final reclaim: {on_last} vs {off_last}"
    );
    assert_eq!(off_last - on_last, 62 * MIB, "the 2..32 MiB outdated pages");
    assert_eq!(on.failed_allocs + off.failed_allocs, 0);
    assert!(on.relocation.unwrap().summed.moved_slices >= 5);
}

#[test]
fn after_the_final_reclaim_every_page_held_holds_live_data() {
    let serving = Workload::Serving
        .generate(&WorkloadSpec {
            seed: 9,
            scale: 0.05,
        })
        .unwrap();
    for events in [serving, growth_trace(10, false)] {
        let program = Program::compile(&events).unwrap();
        let device = Device::simulated(80 * GIB)
            .config(paged(80 * GIB))
            .ignore_env()
            .build()
            .unwrap();
        let mut backend = DeviceBackend::new("sim", device).with_relocation(true);
        let run = gpumem_replay::replay::replay("t", &program, &mut backend, &Default::default());
        let report = run.unwrap().report;
        // The report's pool lines are read before the replay frees what
        // was live at the end.
        let pages: u64 = report.pools.iter().map(|p| p.pages).sum();
        let with_data: u64 = report.pools.iter().map(|p| p.pages_with_live_data).sum();
        let reserved: u64 = report.pools.iter().map(|p| p.bytes_reserved).sum();
        assert!(pages > 0 && report.final_live_bytes > 0);
        assert_eq!(pages, with_data, "{report}");
        assert_eq!(reserved, report.final_reserved_bytes);
    }
}
