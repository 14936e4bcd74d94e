//! The sequence around the window: relocation first, nothing freed or
//! moved while recording, a second recording only where nothing is
//! outdated, abort restores all.

mod common;

use common::fixtures::{assert_restored, expected, input};
use common::pass::{capture_once, capture_pass, pass, replay_read};
use common::*;
use mem_capture::{Capture, CaptureError, CaptureStage, HostGraphBackend};
use mem_relocate::RelocationError;

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
    capture_once(&mut dev, &mut backend, &inp, 4 * KIB, 2).unwrap();
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
        matches!(
            err,
            CaptureError::Streams(RelocationError::Recording { recording: 1 })
        ),
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
fn a_capture_refuses_to_start_while_another_stream_records_over_outdated_memory() {
    let mut dev = HostDevice::new(2, 1);
    let mut first = Capture::new();
    first.prepare(&mut dev).unwrap();
    // Another stream grows and leaves an outdated page behind, which the
    // second capture's relocation could not move under the recording.
    let _other = dev.streams[1].reserve(10 * KIB).unwrap();
    let _big = dev.streams[1].reserve(100 * KIB).unwrap();
    assert!(dev.streams[1].has_outdated());
    let mut second = Capture::new();
    let err = second.prepare(&mut dev).unwrap_err();
    assert_eq!(
        err,
        CaptureError::Streams(RelocationError::Recording { recording: 1 })
    );
    assert_eq!(second.stage(), CaptureStage::Idle);
    assert_eq!(dev.flag.recording_streams(), 1);
    first.abort(&mut dev, &mut HostGraphBackend::new());
    assert!(!dev.flag.is_recording());
}

#[test]
fn with_nothing_outdated_a_capture_stops_only_at_a_pool_already_capturing() {
    let mut dev = HostDevice::new(2, 1);
    let mut first = Capture::new();
    first.prepare(&mut dev).unwrap();
    assert!(!dev.streams[1].has_outdated());
    let mut second = Capture::new();
    // The recording is no reason to refuse here; the shared capture pool is.
    let err = second.prepare(&mut dev).unwrap_err();
    assert!(
        matches!(err, CaptureError::PoolAlreadyCapturing { pool: 0, .. }),
        "{err}"
    );
    assert_eq!(second.stage(), CaptureStage::Idle);
    assert_eq!(dev.relocations, 1, "only the first capture relocated");
    first.abort(&mut dev, &mut HostGraphBackend::new());
    assert!(!dev.flag.is_recording());
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
    assert_restored(&mut dev, &backend, &capture, allocs);
    // From recording.
    capture.prepare(&mut dev).unwrap();
    pass(&mut dev, &inp, 4 * KIB, 2, None).unwrap();
    capture.begin(&mut dev, &mut backend).unwrap();
    let rec = capture.recorder(&mut backend).unwrap();
    drop(pass(&mut dev, &inp, 4 * KIB, 2, Some(rec)).unwrap());
    capture.abort(&mut dev, &mut backend);
    assert_restored(&mut dev, &backend, &capture, allocs);
    // The capture is reusable and works.
    let (graph, out) =
        capture_pass(&mut capture, &mut dev, &mut backend, &inp, 4 * KIB, 2).unwrap();
    let want = expected(&mut dev, &inp, 2);
    assert_eq!(
        replay_read(&graph, &mut dev, &mut backend, &out).unwrap(),
        want
    );
}
