//! The capture sequence on a host-simulated device.

mod common;

use common::pass::{capture_pass, pass, replay_read};
use common::*;
use mem_capture::{
    Capture, CaptureError, CaptureStage, CaptureStreams, GraphBackend, HostGraphBackend,
};
use mem_pools::{CaptureState, MemoryAllocationMode};

fn input(dev: &mut HostDevice, size: u64, seed: u64) -> mem_pools::ManagedMemoryHandle {
    let mm = &mut dev.streams[0];
    let h = mm.reserve(size).unwrap();
    mm.write(h.binding(), &pattern(seed, size as usize))
        .unwrap();
    h
}

fn expected(dev: &mut HostDevice, input: &mem_pools::ManagedMemoryHandle, seed: u8) -> Vec<u8> {
    let size = input.size() as usize;
    read(&mut dev.streams[0], input, size)
        .iter()
        .map(|b| b.wrapping_add(seed))
        .collect()
}

#[test]
fn priming_leaves_the_working_set_not_the_transient_peak() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let mut capture = Capture::new();
    capture.prepare(&mut dev).unwrap();
    // Warmup: three buffers, each dropped at once (transient peak: one).
    for size in [MIB, 2 * MIB, MIB] {
        drop(dev.streams[0].reserve(size).unwrap());
    }
    capture.begin(&mut dev, &mut backend).unwrap();
    let usage = dev.streams[0].memory_usage();
    assert_eq!(
        usage.number_allocs, 0,
        "priming end frees what warmup retained"
    );
    assert!(
        usage.bytes_reserved >= 4 * MIB,
        "the pool keeps the whole working set: {usage:?}"
    );
    // The recorded pass holds all three at once and still allocates nothing.
    let allocs = dev.device_allocs();
    let held: Vec<_> = [MIB, 2 * MIB, MIB]
        .into_iter()
        .map(|size| dev.streams[0].reserve(size).unwrap())
        .collect();
    let view = dev.streams[0].get_storage(held[0].binding()).unwrap();
    capture
        .recorder(&mut backend)
        .unwrap()
        .fill(0, view, 1)
        .unwrap();
    assert_eq!(dev.device_allocs(), allocs);
    let graph = capture.end(&mut dev, &mut backend).unwrap();
    assert_eq!(graph.pinned_slices(), 3);
}

#[test]
fn the_recorded_pass_makes_no_storage_allocation() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 4 * KIB, 3);
    let mut capture = Capture::new();
    capture.prepare(&mut dev).unwrap();
    pass(&mut dev, &inp, 4 * KIB, 7, None).unwrap();
    let before_window = dev.device_allocs();
    capture.begin(&mut dev, &mut backend).unwrap();
    let rec = capture.recorder(&mut backend).unwrap();
    let out = pass(&mut dev, &inp, 4 * KIB, 7, Some(rec)).unwrap();
    let graph = capture.end(&mut dev, &mut backend).unwrap();
    assert_eq!(
        dev.device_allocs(),
        before_window,
        "no storage allocation from begin to end"
    );
    let allocs = dev.device_allocs();
    let want = expected(&mut dev, &inp, 7);
    assert_eq!(
        replay_read(&graph, &mut dev, &mut backend, &out).unwrap(),
        want
    );
    assert_eq!(
        dev.device_allocs(),
        allocs,
        "replay allocates nothing either"
    );
}

#[test]
fn capture_end_pins_exactly_the_touched_slices() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let before = dev.streams[0].reserve(10 * KIB).unwrap();
    let inp = input(&mut dev, 4 * KIB, 1);
    let (graph, out) = capture_pass(
        &mut Capture::new(),
        &mut dev,
        &mut backend,
        &inp,
        4 * KIB,
        2,
    )
    .unwrap();
    // Touched: temp and out (warmup's slices reused by the recorded pass).
    assert_eq!(graph.pinned_slices(), 2);
    assert_eq!(graph.graph_pool().pinned_bytes(), 8 * KIB);
    assert!(
        before.can_mut() && inp.can_mut(),
        "untouched buffers are not the graph's"
    );
    assert!(!out.can_mut(), "the graph holds the output it writes");
}

#[test]
fn an_untouched_pre_existing_buffer_keeps_its_reuse() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 4 * KIB, 1);
    let old = dev.streams[0].reserve(8 * KIB).unwrap();
    let old_view = dev.streams[0].get_storage(old.binding()).unwrap();
    let (_graph, _out) = capture_pass(
        &mut Capture::new(),
        &mut dev,
        &mut backend,
        &inp,
        4 * KIB,
        2,
    )
    .unwrap();
    assert!(old.can_mut());
    drop(old);
    let again = dev.streams[0].reserve(8 * KIB).unwrap();
    assert_eq!(
        dev.streams[0].get_storage(again.binding()).unwrap(),
        old_view,
        "its slice is reused"
    );
}

#[test]
fn a_dropped_graph_releases_its_memory() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 4 * KIB, 1);
    let (graph, out) = capture_pass(
        &mut Capture::new(),
        &mut dev,
        &mut backend,
        &inp,
        4 * KIB,
        2,
    )
    .unwrap();
    drop(out);
    dev.streams[0].cleanup(true);
    assert_eq!(
        dev.streams[0].memory_usage().number_allocs,
        3,
        "input + the graph's two"
    );
    let pool = graph.graph_pool().clone();
    drop(graph);
    assert_eq!(pool.pinned_slices(), 0);
    dev.streams[0].cleanup(true);
    assert_eq!(dev.streams[0].memory_usage().number_allocs, 1);
    assert_eq!(
        dev.resource.stats().current_count,
        1,
        "the graph's pages went back"
    );
}

fn assert_restored(
    dev: &mut HostDevice,
    backend: &HostGraphBackend,
    allocs: u64,
    capture: &Capture,
) {
    assert_eq!(capture.stage(), CaptureStage::Idle);
    assert!(!dev.flag.is_recording());
    assert!(!backend.is_capturing());
    for pool in dev.capture_pools() {
        assert_eq!(pool.capture_state(), CaptureState::default());
        assert_eq!(pool.effective_mode(), MemoryAllocationMode::Auto);
    }
    assert_eq!(dev.streams[0].memory_usage().number_allocs, allocs);
}

#[test]
fn abort_restores_everything() {
    let mut dev = HostDevice::new(2, 2);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 4 * KIB, 1);
    let allocs = dev.streams[0].memory_usage().number_allocs;
    let mut capture = Capture::new();
    // From warming up.
    capture.prepare(&mut dev).unwrap();
    let kept = pass(&mut dev, &inp, 4 * KIB, 2, None).unwrap();
    drop(kept);
    capture.abort(&mut dev, &mut backend);
    assert_restored(&mut dev, &backend, allocs, &capture);
    // From recording.
    capture.prepare(&mut dev).unwrap();
    pass(&mut dev, &inp, 4 * KIB, 2, None).unwrap();
    capture.begin(&mut dev, &mut backend).unwrap();
    let rec = capture.recorder(&mut backend).unwrap();
    drop(pass(&mut dev, &inp, 4 * KIB, 2, Some(rec)).unwrap());
    capture.abort(&mut dev, &mut backend);
    assert_restored(&mut dev, &backend, allocs, &capture);
    // The capture is reusable and works.
    let (graph, out) =
        capture_pass(&mut capture, &mut dev, &mut backend, &inp, 4 * KIB, 2).unwrap();
    let want = expected(&mut dev, &inp, 2);
    assert_eq!(
        replay_read(&graph, &mut dev, &mut backend, &out).unwrap(),
        want
    );
}

#[test]
fn replay_after_reclaim_still_reads_the_right_bytes() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    // A buffer on a sliced page that growth will leave outdated.
    let mover = dev.streams[0].reserve(10 * KIB).unwrap();
    dev.streams[0]
        .write(mover.binding(), &pattern(8, 10 * KIB as usize))
        .unwrap();
    // A static input the graph reads but does not reserve (its own page).
    let inp = input(&mut dev, 2 * MIB, 5);
    let mut capture = Capture::new();
    capture.uses(0, inp.binding()).unwrap();
    let (graph, out) =
        capture_pass(&mut capture, &mut dev, &mut backend, &inp, 10 * KIB, 9).unwrap();
    assert_eq!(graph.outside_buffers(), 1);
    let want = expected(&mut dev, &inp, 9)[..10 * KIB as usize].to_vec();
    // Grow the sliced pool past its page size: the mover's page is outdated.
    let big = dev.streams[0].reserve(100 * KIB).unwrap();
    assert!(dev.streams[0].has_outdated());
    // Reclaim: relocate, then give back every empty page.
    assert_eq!(dev.relocate_stream(0), 1, "the mover moved");
    dev.streams[0].cleanup(true);
    assert!(!dev.streams[0].has_outdated());
    assert_eq!(
        replay_read(&graph, &mut dev, &mut backend, &out).unwrap(),
        want
    );
    assert_eq!(
        read(&mut dev.streams[0], &mover, 10 * KIB as usize),
        pattern(8, 10 * KIB as usize)
    );
    drop(big);
}

#[test]
fn an_outside_buffer_the_graph_uses_never_moves_while_it_lives() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let inp = input(&mut dev, 10 * KIB, 5);
    let mut capture = Capture::new();
    capture.uses(0, inp.binding()).unwrap();
    let (graph, out) =
        capture_pass(&mut capture, &mut dev, &mut backend, &inp, 10 * KIB, 9).unwrap();
    let view = dev.streams[0].get_storage(inp.binding()).unwrap();
    let _big = dev.streams[0].reserve(100 * KIB).unwrap();
    assert!(dev.streams[0].has_outdated());
    assert_eq!(
        dev.relocate_stream(0),
        0,
        "its page is pinned by the raw address"
    );
    assert_eq!(dev.streams[0].get_storage(inp.binding()).unwrap(), view);
    let want = expected(&mut dev, &inp, 9);
    assert_eq!(
        replay_read(&graph, &mut dev, &mut backend, &out).unwrap(),
        want
    );
}

#[test]
fn prepare_relocates_every_streams_outdated_memory_first() {
    let mut dev = HostDevice::new(2, 1);
    let mut backend = HostGraphBackend::new();
    let other = dev.streams[1].reserve(10 * KIB).unwrap();
    dev.streams[1]
        .write(other.binding(), &pattern(4, 10 * KIB as usize))
        .unwrap();
    let _big = dev.streams[1].reserve(100 * KIB).unwrap();
    assert!(dev.streams[1].has_outdated());
    let inp = input(&mut dev, 4 * KIB, 1);
    capture_pass(
        &mut Capture::new(),
        &mut dev,
        &mut backend,
        &inp,
        4 * KIB,
        2,
    )
    .unwrap();
    assert_eq!(dev.relocations, 1);
    assert!(
        !dev.streams[1].has_outdated(),
        "the other stream's memory moved before warmup"
    );
    assert_eq!(
        read(&mut dev.streams[1], &other, 10 * KIB as usize),
        pattern(4, 10 * KIB as usize)
    );
}

#[test]
fn an_allocation_the_window_cannot_serve_names_the_size_and_says_lengthen_the_warmup() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let mut capture = Capture::new();
    let err = capture
        .run(
            &mut dev,
            &mut backend,
            |d| d.streams[0].reserve(4 * KIB).map(drop).map_err(Into::into),
            |d, _| d.streams[0].reserve(8 * KIB).map(drop).map_err(Into::into),
        )
        .unwrap_err();
    assert!(
        matches!(err, CaptureError::WindowAllocation { size: 8192, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("lengthen the warmup"), "{err}");
    assert_restored(&mut dev, &backend, 0, &capture);
}

#[test]
fn while_a_stream_records_relocation_and_cleanup_free_nothing() {
    let mut dev = HostDevice::new(2, 1);
    let mut backend = HostGraphBackend::new();
    let mut capture = Capture::new();
    capture.prepare(&mut dev).unwrap();
    // Another stream grows and leaves an outdated page behind.
    let other = dev.streams[1].reserve(10 * KIB).unwrap();
    let _big = dev.streams[1].reserve(100 * KIB).unwrap();
    drop(dev.streams[0].reserve(KIB).unwrap());
    let reserved = dev.streams[0].memory_usage().bytes_reserved;
    assert!(dev.flag.is_recording());
    assert_eq!(
        dev.relocate_stream(1),
        0,
        "relocation waits for the recording"
    );
    assert!(dev.streams[1].has_outdated());
    let err = dev
        .flag
        .unless_recording(|| dev.streams[1].cleanup(true))
        .unwrap_err();
    assert!(
        matches!(err, CaptureError::AlreadyRecording { streams: 1 }),
        "{err}"
    );
    dev.streams[0].cleanup(true);
    assert_eq!(
        dev.streams[0].memory_usage().bytes_reserved,
        reserved,
        "the capture pool gives nothing back"
    );
    capture.abort(&mut dev, &mut backend);
    assert!(dev.relocate_stream(1) > 0, "after the capture it moves");
    drop(other);
}

#[test]
fn a_capture_refuses_to_start_while_another_stream_records() {
    let mut dev = HostDevice::new(1, 1);
    let mut first = Capture::new();
    first.prepare(&mut dev).unwrap();
    let mut second = Capture::new();
    let err = second.prepare(&mut dev).unwrap_err();
    assert_eq!(err, CaptureError::AlreadyRecording { streams: 1 });
    assert_eq!(second.stage(), CaptureStage::Idle);
    assert_eq!(dev.flag.recording_streams(), 1);
    first.abort(&mut dev, &mut HostGraphBackend::new());
    assert!(!dev.flag.is_recording());
}

#[test]
fn deferred_frees_are_drained_before_priming_ends() {
    let mut dev = HostDevice::new(1, 1);
    let mut backend = HostGraphBackend::new();
    let mut capture = Capture::new();
    let graph = capture
        .run(
            &mut dev,
            &mut backend,
            |d| {
                // A staging buffer whose free the runtime defers.
                let staging = d.streams[0].reserve(2 * KIB)?;
                d.deferred.push(staging);
                Ok(())
            },
            |d, rec| {
                let staging = d.streams[0].reserve(2 * KIB)?;
                let view = d.streams[0].get_storage(staging.binding())?;
                rec.write(0, view, &[1, 2, 3])
            },
        )
        .unwrap();
    assert!(dev.deferred.is_empty());
    assert_eq!(
        graph.pinned_slices(),
        1,
        "the recorded pass reused the staging slice"
    );
}

#[test]
fn a_staging_pool_captures_alongside_the_device_pool() {
    let mut dev = HostDevice::new(2, 2);
    let mut backend = HostGraphBackend::new();
    let mut capture = Capture::new();
    let stage = |d: &mut HostDevice| -> Result<_, CaptureError> {
        let host = d.streams[1].reserve(512)?;
        let device = d.streams[0].reserve(512)?;
        Ok((host, device))
    };
    let mut kept = None;
    let graph = capture
        .run(
            &mut dev,
            &mut backend,
            |d| stage(d).map(drop),
            |d, rec| {
                let (host, device) = stage(d)?;
                let hv = d.streams[1].get_storage(host.binding())?;
                let dv = d.streams[0].get_storage(device.binding())?;
                rec.write(1, hv, &[7; 512])?;
                rec.kernel("upload", vec![(1, hv), (0, dv)], |a| {
                    let src = a[0].clone();
                    a[1].copy_from_slice(&src);
                })?;
                kept = Some(device);
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(graph.pinned_slices(), 2, "one slice in each pool");
    graph.replay(&mut backend, &mut dev).unwrap();
    let device = kept.unwrap();
    assert_eq!(read(&mut dev.streams[0], &device, 512), vec![7; 512]);
}
