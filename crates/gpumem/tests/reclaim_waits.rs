//! Where the facade waits for arenas' stream work: only in an explicit
//! synchronize, in `sleep`, and in the out-of-memory retry, which waits
//! for the streams whose idle chunks wait or whose recorded uses hold
//! memory, and for nothing more.

use gpumem::prelude::*;

fn host(streams: usize) -> Device {
    Device::host_with_capacity(64 * MIB)
        .streams(streams)
        .ignore_env()
        .build()
        .unwrap()
}

/// Between `before` and `after` the retry waited for one stream (`whose`)
/// and never for the whole device.
fn one_stream_wait(before: &MemoryStats, after: &MemoryStats, whose: &str) {
    let w = after.waits;
    assert_eq!(w.device_waits, 0, "no device-wide wait: {w:?}");
    assert_eq!(w.oom_retry, 0, "{w:?}");
    assert_eq!(
        w.stream_waits - before.waits.stream_waits,
        1,
        "one stream wait, {whose}: {w:?}"
    );
}

#[test]
fn the_out_of_memory_retry_waits_only_for_the_stream_whose_idle_chunk_waits() {
    let device = host(3);
    assert!(device.memory_report().virtual_memory.is_some(), "arenas");
    let (s0, s1, s2) = (
        device.stream(0).unwrap(),
        device.stream(1).unwrap(),
        device.stream(2).unwrap(),
    );
    // Stream 0: a 40 MiB chunk freed while a kernel using it runs.
    let a = s0.reserve(40 * MIB).unwrap();
    let fence = s0.reserve(256).unwrap();
    let op0 = s0.submit();
    drop(a);
    s0.drain();
    // Stream 1: work running too, but no idle chunk waits for it.
    let live = s1.reserve(2 * MIB).unwrap();
    let op1 = s1.submit();
    let before = device.stats();
    assert_eq!(before.chunks.unmaps, 0, "the idle chunk waits for {op0}");
    // Stream 2 needs 30 MiB: 44 MiB are held, so only the waiting chunk
    // can make room. The retry waits for stream 0 alone.
    let b = s2
        .reserve(30 * MIB)
        .expect("the retry frees the idle chunk");
    let after = device.stats();
    assert_eq!(after.num_alloc_retries, 1);
    assert!(s0.completed() >= op0, "stream 0 was waited for");
    assert!(
        s1.completed() < op1,
        "stream 1 has no idle chunk waiting: not waited for"
    );
    assert_eq!(after.chunks.unmaps, 1, "the 40 MiB chunk went, whole");
    one_stream_wait(&before, &after, "stream 0's");
    drop((b, live, fence));
}

#[test]
fn no_reserve_free_or_cleanup_waits_for_stream_work() {
    let device = host(2);
    let s = device.default_stream();
    let mut last = 0;
    for round in 0..8u64 {
        let a = s.reserve((round + 1) * 3 * MIB).unwrap();
        last = s.submit();
        drop(a);
        s.cleanup();
    }
    device.reclaim().unwrap();
    let w = device.stats().waits;
    assert_eq!((w.device_waits, w.stream_waits), (0, 0), "{w:?}");
    assert!(s.completed() < last, "nothing was waited for");
    device.synchronize().unwrap();
    let w = device.stats().waits;
    assert_eq!((w.synchronize, w.device_waits), (1, 1), "{w:?}");
    assert!(s.completed() >= last);
}

#[test]
fn the_out_of_memory_retry_waits_only_for_the_stream_whose_recorded_use_holds_memory() {
    let device = host(3);
    let (s0, s1, s2) = (
        device.stream(0).unwrap(),
        device.stream(1).unwrap(),
        device.stream(2).unwrap(),
    );
    // Stream 0's 40 MiB, used by a kernel on stream 1, then dropped: stream
    // 0 holds it until stream 1's kernel completes.
    let a = s0.reserve(40 * MIB).unwrap();
    let op1 = s1.launch(&[&a]).unwrap().submit();
    drop(a);
    s0.drain();
    assert_eq!(s0.held_bytes(), 40 * MIB, "held for stream 1's kernel");
    // Stream 2 has work running too, but holds nothing up.
    let live = s2.reserve(2 * MIB).unwrap();
    let op2 = s2.submit();
    let before = device.stats();
    // Stream 2 needs 30 MiB: only the held 40 MiB can make room. The retry
    // waits for stream 1 alone, releases the hold and gives the chunk back.
    let b = s2
        .reserve(30 * MIB)
        .expect("the retry ends the hold and frees its memory");
    let after = device.stats();
    assert_eq!(after.num_alloc_retries, 1);
    assert!(s1.completed() >= op1, "stream 1 was waited for");
    assert!(
        s2.completed() < op2,
        "stream 2's work holds nothing: not waited for"
    );
    assert_eq!(s0.held_bytes(), 0, "the hold ended");
    one_stream_wait(&before, &after, "stream 1's");
    drop((b, live));
}
