//! The host backend and the recording mark: what they refuse, and that a
//! refusal changes nothing.

mod common;

use common::fixtures::device_with_input;
use common::pass::capture_once;
use common::*;
use mem_capture::{Capture, CaptureError, CaptureStage, GraphBackend};
use mem_relocate::RelocationError;

#[test]
fn replaying_while_the_backend_captures_is_refused() {
    let (mut dev, mut backend, inp) = device_with_input(4 * KIB, 2);
    let (graph, _out) = capture_once(&mut dev, &mut backend, &inp, 4 * KIB, 1).unwrap();
    backend.begin_capture().unwrap();
    assert_eq!(
        graph.replay(&mut backend, &mut dev),
        Err(CaptureError::BackendBusy)
    );
    assert_eq!(backend.begin_capture(), Err(CaptureError::BackendBusy));
    backend.abort_capture();
    graph.replay(&mut backend, &mut dev).unwrap();
}

#[test]
fn recording_outside_a_capture_is_refused() {
    let (mut dev, mut backend, inp) = device_with_input(4 * KIB, 2);
    let view = dev.streams[0].get_storage(inp.binding()).unwrap();
    assert_eq!(
        backend.recorder().fill(0, view, 1),
        Err(CaptureError::NotCapturing)
    );
    assert_eq!(
        backend.end_capture().unwrap_err(),
        CaptureError::NotCapturing
    );
    let err = Capture::new().recorder(&mut backend).unwrap_err();
    assert!(matches!(
        err,
        CaptureError::WrongStage {
            call: "recorder",
            ..
        }
    ));
}

#[test]
fn a_write_longer_than_its_view_and_a_copy_between_sizes_are_refused() {
    let (mut dev, mut backend, inp) = device_with_input(4 * KIB, 2);
    let view = dev.streams[0].get_storage(inp.binding()).unwrap();
    let half = view.narrow(None, Some(2 * KIB)).unwrap();
    backend.begin_capture().unwrap();
    let rec = backend.recorder();
    let err = rec.write(0, half, &[0; 3000]).unwrap_err();
    assert_eq!(
        err,
        CaptureError::WriteTooLong {
            len: 3000,
            size: 2048
        }
    );
    assert_eq!(
        rec.copy(0, view, half),
        Err(CaptureError::CopySizeMismatch {
            src: 4096,
            dst: 2048
        })
    );
    assert_eq!(rec.recorded(), 0);
    backend.abort_capture();
}

#[test]
fn a_graph_naming_a_pool_the_streams_lack_changes_no_byte() {
    let (mut dev, mut backend, inp) = device_with_input(4 * KIB, 2);
    let view = dev.streams[0].get_storage(inp.binding()).unwrap();
    let mut capture = Capture::new();
    let graph = capture
        .run(
            &mut dev,
            &mut backend,
            |_| Ok(()),
            |_, rec| {
                rec.fill(0, view, 0xAA)?;
                rec.fill(1, view, 0xBB)
            },
        )
        .unwrap();
    let err = backend.replay(graph.backend_graph(), &mut []).unwrap_err();
    assert_eq!(err, CaptureError::UnknownPool { pool: 0, pools: 0 });
    let mut pools = vec![&mut dev.streams[0] as &mut dyn mem_capture::CapturePool];
    let err = backend
        .replay(graph.backend_graph(), &mut pools)
        .unwrap_err();
    assert_eq!(err, CaptureError::UnknownPool { pool: 1, pools: 1 });
    assert_eq!(
        read(&mut dev.streams[0], &inp, 4),
        pattern(2, 4),
        "no byte changed"
    );
}

#[test]
fn the_recording_flag_counts_streams_and_never_goes_below_zero() {
    let flag = mem_capture::RecordingFlag::new();
    flag.stop();
    assert_eq!(flag.recording_streams(), 0);
    flag.start();
    flag.start();
    let copy = flag.clone();
    assert_eq!(copy.recording_streams(), 2);
    assert_eq!(
        copy.unless_recording(|| 1),
        Err(CaptureError::Streams(RelocationError::Recording {
            recording: 2
        }))
    );
    flag.stop();
    flag.stop();
    assert_eq!(copy.unless_recording(|| 1), Ok(1));
}

#[test]
fn a_step_refusing_inside_run_leaves_nothing_open() {
    let (mut dev, mut backend, _inp) = device_with_input(4 * KIB, 2);
    backend.begin_capture().unwrap(); // someone else records on this backend
    let err = Capture::new()
        .run(&mut dev, &mut backend, |_| Ok(()), |_, _| Ok(()))
        .unwrap_err();
    assert_eq!(err, CaptureError::BackendBusy);
    assert!(!dev.flag.is_recording());
    assert!(!dev.streams[0].capture_state().active);
    assert!(
        backend.is_capturing(),
        "the other capture is not ours to stop"
    );
    backend.abort_capture();
}

#[test]
fn a_pass_panicking_inside_run_leaves_nothing_open() {
    for panic_in_warmup in [true, false] {
        let (mut dev, mut backend, _inp) = device_with_input(4 * KIB, 2);
        let mut capture = Capture::new();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            capture.run(
                &mut dev,
                &mut backend,
                |_| {
                    if panic_in_warmup {
                        panic!("warmup")
                    } else {
                        Ok(())
                    }
                },
                |_, _| panic!("recorded pass"),
            )
        }));
        assert!(unwound.is_err(), "the pass panicked");
        assert_eq!(capture.stage(), CaptureStage::Idle);
        assert!(!dev.flag.is_recording(), "the stream is unmarked");
        assert!(
            !dev.streams[0].capture_state().active,
            "the pool left capture"
        );
        assert!(!backend.is_capturing(), "no stream stays in capture");
    }
}
