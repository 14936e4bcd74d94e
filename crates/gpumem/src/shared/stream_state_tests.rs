use std::sync::atomic::Ordering;

use crate::Device;

fn one_stream() -> Device {
    Device::host().streams(1).ignore_env().build().unwrap()
}

#[test]
fn a_synchronize_marks_complete_what_was_counted_before_it_began() {
    let device = one_stream();
    let stream = &device.shared.streams[0];
    stream.submitted.fetch_add(2, Ordering::AcqRel);
    stream.synchronized(|| Ok::<(), ()>(())).unwrap();
    assert_eq!(stream.completed(), 2);
}

#[test]
fn an_operation_counted_while_a_synchronize_runs_is_not_marked_complete() {
    let device = one_stream();
    let stream = &device.shared.streams[0];
    stream.submitted.fetch_add(1, Ordering::AcqRel);
    // Another thread enqueues and counts an operation while the wait runs:
    // the wait may not have covered it.
    stream
        .synchronized(|| {
            stream.submitted.fetch_add(1, Ordering::AcqRel);
            Ok::<(), ()>(())
        })
        .unwrap();
    assert_eq!(stream.completed(), 1, "only what was counted before");
    assert_eq!(stream.submitted(), 2);
}

#[test]
fn a_failed_synchronize_marks_nothing_complete() {
    let device = one_stream();
    let stream = &device.shared.streams[0];
    stream.submitted.fetch_add(3, Ordering::AcqRel);
    assert_eq!(
        stream.synchronized(|| Err("device lost")),
        Err("device lost")
    );
    assert_eq!(stream.completed(), 0);
}
