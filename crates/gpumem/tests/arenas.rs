//! Virtual-memory arenas through the facade: the default where the device
//! has virtual memory, with physical memory only under live data.

mod common;

use common::*;
use gpumem::prelude::*;

#[test]
fn a_default_host_device_carves_arenas_and_maps_only_what_live_data_touches() {
    let device = host(1);
    let s = device.default_stream();
    let report = device.memory_report();
    assert!(
        report.virtual_memory.is_some(),
        "arenas on the host backend"
    );
    assert_eq!(report.arena_fallback, None);
    let a = s.reserve(3 * MIB).unwrap();
    s.write(&a, &pattern(1, 4096)).unwrap();
    let b = s.reserve(64 * KIB).unwrap();
    s.write(&b, &pattern(2, 4096)).unwrap();
    let stats = device.stats();
    assert!(stats.chunks.virtual_bytes >= 64 * GIB);
    assert_eq!(stats.reserved_bytes.current, 4 * MIB, "chunks 0 and 1");
    let vm = device.memory_report().virtual_memory.unwrap();
    assert_eq!(vm.mapped_bytes, stats.reserved_bytes.current);
    assert_eq!(device.budget().charged(), 4 * MIB, "chunks are charged");
    assert_eq!(read(&s, &a, 4096), pattern(1, 4096));
    drop(a);
    device.reclaim().unwrap();
    assert_eq!(device.stats().reserved_bytes.current, 2 * MIB);
    assert_eq!(read(&s, &b, 4096), pattern(2, 4096));
    drop(b);
    device.reclaim().unwrap();
    assert_eq!(device.stats().reserved_bytes.current, 0);
    assert_eq!(device.budget().charged(), 0);
    let text = device.memory_report().to_string();
    assert!(text.contains("arenas:"), "{text}");
}

#[test]
fn an_allocation_larger_than_a_page_is_served_by_an_arena() {
    let device = Device::simulated(80 * GIB).ignore_env().build().unwrap();
    let s = device.default_stream();
    let big = s.reserve(5 * GIB + 1).unwrap();
    assert_eq!(device.stats().reserved_bytes.current, 5 * GIB + 2 * MIB);
    drop(big);
}

#[test]
fn a_device_too_small_for_chunks_falls_back_to_pages_and_says_why() {
    let device = Device::host()
        .budget(Budget::Bytes(8 * MIB))
        .ignore_env()
        .build()
        .unwrap();
    let report = device.memory_report();
    assert!(report.virtual_memory.is_none());
    let why = report.arena_fallback.clone().expect("a reason");
    assert!(why.contains("fewer than 16"), "{why}");
    assert!(report.to_string().contains("arenas: off"));
    let h = device.default_stream().reserve(4096).unwrap();
    drop(h);
}

#[test]
fn the_conf_variable_names_the_arena_layouts() {
    let config = GpumemConfig::from_conf("pools:arenas").unwrap();
    assert_eq!(config.pools, PoolLayout::Arenas);
    let config = GpumemConfig::from_conf("pools:auto").unwrap();
    assert_eq!(config.pools, PoolLayout::Auto);
    let paged = Device::host()
        .pools(PoolLayout::SubSlices)
        .ignore_env()
        .build()
        .unwrap();
    assert!(paged.memory_report().virtual_memory.is_none());
    assert_eq!(paged.memory_report().arena_fallback, None, "not asked for");
}

#[test]
fn memory_held_for_another_stream_keeps_its_chunks_mapped() {
    let device = host(2);
    let (a, b) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let x = a.reserve(4 * MIB).unwrap();
    a.write(&x, &pattern(5, 4096)).unwrap();
    b.record_use(&x).unwrap();
    let op = b.submit();
    let binding = x.binding();
    drop(x);
    a.cleanup();
    assert_eq!(a.held_bytes(), 4 * MIB);
    assert_eq!(
        device.stats().reserved_bytes.current,
        4 * MIB,
        "still mapped"
    );
    let mut out = vec![0; 4096];
    a.with_memory(|mm| mm.read(binding, &mut out)).unwrap();
    assert_eq!(out, pattern(5, 4096));
    b.complete_through(op).unwrap();
    a.cleanup();
    assert_eq!(device.stats().reserved_bytes.current, 0);
}

#[test]
fn sleep_and_wake_keep_handles_addresses_bytes_and_captured_graphs() {
    let device = host(2);
    let (a, b) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let weights = a.reserve(3 * MIB).unwrap();
    a.write(&weights, &pattern(9, 4096)).unwrap();
    let cache = b.reserve(6 * MIB).unwrap();
    b.write(&cache, &pattern(10, 4096)).unwrap();
    let addresses = (a.view(&weights).unwrap(), b.view(&cache).unwrap());
    // A graph that writes into its own buffer and reads the weights.
    let warmup = a.begin_capture().unwrap();
    drop(warmup.stream().reserve(64 * KIB).unwrap());
    let mut recording = warmup.start_recording().unwrap();
    let out = recording.stream().reserve(64 * KIB).unwrap();
    let out_view = a.view(&out).unwrap();
    recording.recorder().fill(0, out_view, 0x42).unwrap();
    recording.uses(&weights).unwrap();
    let mut graph = recording.end().unwrap();
    let reserved = device.stats().reserved_bytes.current;
    assert!(reserved > 0);
    let report = device.sleep(SleepContents::Preserve).unwrap();
    // The capture's buffer lives in the (paged) persistent pool: kept.
    assert_eq!(report.released_bytes + report.kept_paged_bytes, reserved);
    assert!(report.released_bytes >= 9 * MIB);
    assert!(device.is_asleep());
    assert_eq!(
        device.stats().reserved_bytes.current,
        report.kept_paged_bytes
    );
    assert_eq!(
        device.budget().charged(),
        report.kept_paged_bytes,
        "the arenas' budget is free for others"
    );
    assert!(
        a.read(&weights, &mut [0u8; 16]).is_err(),
        "no memory under it now"
    );
    assert!(matches!(
        a.reserve(64),
        Err(GpuMemError::Pool(gpumem::pools::IoError::Asleep { .. }))
    ));
    assert!(device.wake().unwrap() > 0);
    assert!(!device.is_asleep());
    assert_eq!(
        (a.view(&weights).unwrap(), b.view(&cache).unwrap()),
        addresses
    );
    assert_eq!(read(&a, &weights, 4096), pattern(9, 4096));
    assert_eq!(read(&b, &cache, 4096), pattern(10, 4096));
    graph.replay().unwrap();
    assert_eq!(
        read(&a, &out, 16),
        vec![0x42; 16],
        "the graph replays at its addresses"
    );
    drop(graph);
}

#[test]
fn a_device_does_not_sleep_under_a_recording() {
    let device = host(1);
    let s = device.default_stream();
    let warmup = s.begin_capture().unwrap();
    let recording = warmup.start_recording().unwrap();
    assert!(matches!(
        device.sleep(SleepContents::Discard),
        Err(GpuMemError::Recording { .. })
    ));
    drop(recording);
    device.sleep(SleepContents::Discard).unwrap();
    device.wake().unwrap();
}

#[test]
fn another_streams_cached_chunks_are_given_back_before_an_arena_reservation_fails() {
    let device = Device::host_with_capacity(64 * MIB)
        .streams(2)
        .ignore_env()
        .build()
        .unwrap();
    assert!(device.memory_report().virtual_memory.is_some(), "arenas");
    let (a, b) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    drop(a.reserve(40 * MIB).unwrap());
    a.drain();
    assert_eq!(
        a.stats().reserved_bytes.current,
        40 * MIB,
        "cached on stream 0"
    );
    let big = b
        .reserve(48 * MIB)
        .expect("the retry gives stream 0's cached chunks back");
    assert_eq!(device.stats().num_alloc_retries, 1);
    assert_eq!(a.stats().reserved_bytes.current, 0);
    let err = b.reserve(32 * MIB).unwrap_err();
    assert!(matches!(err, GpuMemError::OutOfMemory(_)), "{err}");
    assert_eq!(
        device.stats().reserved_bytes.current,
        48 * MIB,
        "the refusal left no chunk behind"
    );
    drop(big);
}

#[test]
fn an_idle_chunk_under_its_share_is_given_back_before_the_out_of_memory_retry() {
    let device = Device::host_with_capacity(64 * MIB)
        .ignore_env()
        .build()
        .unwrap();
    assert!(device.memory_report().virtual_memory.is_some(), "arenas");
    let s = device.default_stream();
    let hole = s.reserve(2 * MIB).unwrap(); // chunk 0
    let mut live = vec![s.reserve(256).unwrap()]; // chunk 1: the hole stays
    for _ in 0..29 {
        live.push(s.reserve(2 * MIB).unwrap()); // 62 of 64 MiB held
    }
    drop(hole);
    s.drain();
    // 4 MiB: not in the hole, and 2 MiB free. The idle chunk (1 of 31
    // mapped, under the shed share) goes back in the engine's own retry
    // (mem-pools `shed_short.rs`), so the device-wide retry, which waits
    // for streams and frees every stream's cache, is not needed.
    let big = s.reserve(4 * MIB).unwrap();
    assert_eq!(device.stats().num_alloc_retries, 0);
    assert_eq!(device.stats().reserved_bytes.current, 64 * MIB);
    drop((big, live));
}

#[test]
fn a_slice_refused_new_chunks_lands_on_idle_slots_instead_of_failing() {
    const SLOT: u64 = 2 * MIB;
    let device = Device::host_with_capacity(512 * SLOT)
        .ignore_env()
        .build()
        .unwrap();
    assert!(device.memory_report().virtual_memory.is_some(), "arenas");
    let s = device.default_stream();
    // A 17-slot chunk whose first slot stays live: 16 idle slots that no
    // cleanup gives back (a chunk goes only whole).
    let first = s.reserve(17 * SLOT).unwrap();
    let mut live = vec![s.reserve(SLOT).unwrap()];
    // Nine holes of 6..=14 slots, their chunks given back: one per size
    // class from a 6-slot request up, so placement's hot path weighs
    // only them, never the idle slots.
    let mut holes = Vec::new();
    for i in 0..9 {
        holes.push(s.reserve((6 + i) * SLOT).unwrap());
        live.push(s.reserve(SLOT).unwrap());
    }
    drop(first);
    s.drain();
    live.push(s.reserve(SLOT).unwrap());
    drop(holes);
    device.reclaim().unwrap();
    for _ in 0..15 {
        live.push(s.reserve(32 * SLOT).unwrap()); // 507 of 512 slots held
    }
    assert_eq!(device.stats().reserved_bytes.current, 507 * SLOT);
    // 6 slots: no hole can get new chunks for them and the out-of-memory
    // retry's reclaim frees nothing (before: `OutOfMemory` with 32 MiB
    // reserved but unallocated); placed again on the idle slots
    // (mem-pools `place_short.rs`) they need none, and no retry.
    let placed = s.reserve(6 * SLOT).unwrap();
    assert_eq!(device.stats().reserved_bytes.current, 507 * SLOT);
    assert_eq!(device.stats().num_alloc_retries, 0);
    drop((placed, live));
}

#[test]
fn an_idle_chunk_stays_mapped_until_its_streams_work_completes() {
    let device = host(1);
    let s = device.default_stream();
    let a = s.reserve(4 * MIB).unwrap(); // chunks 0-1
    let fence = s.reserve(256).unwrap(); // chunk 2: the hole stays a hole
    let op = s.submit(); // a kernel using `a`, still running
    drop(a);
    // Neither a cleanup nor the reclaim waits for it: the chunk stays.
    device.reclaim().unwrap();
    assert_eq!(
        device.stats().chunks.unmaps,
        0,
        "operation {op} may still read it"
    );
    assert_eq!(device.stats().reserved_bytes.current, 6 * MIB);
    // A reservation that needs memory creates it rather than wait.
    let b = s.reserve(8 * MIB).unwrap();
    assert_eq!(device.stats().chunks.unmaps, 0);
    s.complete_through(op).unwrap();
    device.reclaim().unwrap();
    let stats = device.stats();
    assert_eq!(
        stats.chunks.unmaps, 1,
        "complete: the idle chunk goes, whole"
    );
    assert_eq!(stats.reserved_bytes.current, 2 * MIB + 8 * MIB);
    drop((b, fence));
    device.reclaim().unwrap();
    assert_eq!(device.stats().reserved_bytes.current, 0);
}

#[test]
fn the_out_of_memory_retry_waits_for_the_stream_an_idle_chunk_waits_for() {
    let device = Device::host_with_capacity(64 * MIB)
        .ignore_env()
        .build()
        .unwrap();
    assert!(device.memory_report().virtual_memory.is_some(), "arenas");
    let s = device.default_stream();
    let a = s.reserve(40 * MIB).unwrap();
    let fence = s.reserve(256).unwrap(); // 42 of 64 MiB held
    let op = s.submit();
    drop(a);
    // 41 MiB (too big for the hole) does not fit beside the idle chunk,
    // which may not go yet: the retry synchronizes this stream, then the
    // cleanup gives it back, and the reservation succeeds.
    let b = s.reserve(41 * MIB).unwrap();
    assert!(s.completed() >= op, "the retry waited for the stream");
    assert_eq!(device.stats().chunks.unmaps, 1);
    drop((b, fence));
}
