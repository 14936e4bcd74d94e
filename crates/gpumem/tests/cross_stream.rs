//! The cursor rule and `record_use`, on host-simulated streams.

mod common;

use common::*;
use gpumem::pools::IoError;
use gpumem::prelude::*;

#[test]
fn bind_stamps_the_next_operation_of_the_binding_stream() {
    let device = host(2);
    let (a, b) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let x = a.reserve(256).unwrap();
    assert_eq!(b.get_cursor(&x).unwrap(), 0, "never bound");
    a.submit();
    a.submit();
    assert_eq!(a.stamp(&x).unwrap(), 3);
    assert_eq!(
        b.get_cursor(&x).unwrap(),
        3,
        "read on the owner from any stream"
    );
    let fresh = a.reserve(256).unwrap();
    assert_eq!(a.bind(fresh, x.clone()).unwrap(), 3);
}

#[test]
fn another_stream_waits_only_while_the_bound_operation_is_in_flight() {
    let device = host(2);
    let (a, b) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let x = a.reserve(4096).unwrap();
    a.stamp(&x).unwrap();
    assert_eq!(
        b.must_wait(&x).unwrap(),
        None,
        "nothing submitted uses it yet"
    );
    let op = a.submit();
    let wait = b.must_wait(&x).unwrap();
    assert_eq!(wait, Some(StreamWait { stream: 0, op }));
    assert_eq!(
        a.must_wait(&x).unwrap(),
        None,
        "a stream's own work is ordered"
    );
    b.wait_for(wait.unwrap()).unwrap();
    a.complete_through(op).unwrap();
    assert_eq!(b.must_wait(&x).unwrap(), None);
}

#[test]
fn completion_cannot_run_ahead_of_submission_or_backwards() {
    let device = host(1);
    let s = device.default_stream();
    s.submit();
    assert!(matches!(
        s.complete_through(2),
        Err(GpuMemError::CompletionAhead {
            op: 2,
            submitted: 1,
            ..
        })
    ));
    s.complete_through(1).unwrap();
    s.complete_through(0).unwrap();
    assert_eq!(s.completed(), 1, "completion never moves backwards");
    s.submit();
    s.synchronize().unwrap();
    assert_eq!(s.completed(), 2);
}

/// A buffer of stream A used by one operation of stream B, then dropped.
fn used_by_b() -> (Device, Stream, Stream, gpumem::pools::ManagedMemoryBinding) {
    let device = host(2);
    let (a, b) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let x = a.reserve(4096).unwrap();
    a.write(&x, &pattern(7, 4096)).unwrap();
    b.record_use(&x).unwrap();
    b.submit();
    let binding = x.binding();
    drop(x);
    (device, a, b, binding)
}

fn read_binding(
    a: &Stream,
    binding: gpumem::pools::ManagedMemoryBinding,
) -> Result<Vec<u8>, IoError> {
    let mut out = vec![0; 4096];
    a.with_memory(|mm| mm.read(binding, &mut out)).map(|()| out)
}

#[test]
fn memory_used_by_another_stream_is_not_reused_before_its_work_completes() {
    let (_device, a, b, binding) = used_by_b();
    let others: Vec<_> = (0..8).map(|_| a.reserve(4096).unwrap()).collect();
    assert_eq!(a.held_bytes(), 4096);
    assert_eq!(
        read_binding(&a, binding).unwrap(),
        pattern(7, 4096),
        "not reused"
    );
    let held_view = a.with_memory(|mm| mm.get_storage(binding)).unwrap();
    for h in &others {
        assert_ne!(
            a.with_memory(|mm| mm.get_storage(h.binding())).unwrap(),
            held_view
        );
    }
    b.complete_through(1).unwrap();
    a.cleanup();
    assert_eq!(a.held_bytes(), 0);
    assert!(matches!(
        read_binding(&a, binding),
        Err(IoError::StaleBinding { .. })
    ));
}

#[test]
fn work_submitted_after_the_record_and_before_the_free_is_waited_for_too() {
    let device = host(2);
    let (a, b) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let x = a.reserve(512).unwrap();
    b.record_use(&x).unwrap();
    b.submit();
    b.submit();
    let binding = x.binding();
    drop(x);
    a.cleanup(); // observes the free: B had submitted 2 operations
    b.submit(); // later work on B cannot use freed memory; not waited for
    b.complete_through(1).unwrap();
    a.cleanup();
    assert_eq!(a.held_bytes(), 512);
    b.complete_through(2).unwrap();
    a.cleanup();
    assert_eq!(a.held_bytes(), 0);
    assert!(a.with_memory(|mm| mm.get_cursor(binding)).is_err());
}

#[test]
fn a_recorded_use_holds_nothing_while_the_user_still_holds_the_handle() {
    let device = host(2);
    let (a, b) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let x = a.reserve(512).unwrap();
    b.record_use(&x).unwrap();
    b.record_use(&x).unwrap();
    b.submit();
    b.synchronize().unwrap();
    a.cleanup();
    assert_eq!(
        a.held_bytes(),
        0,
        "the user's live memory is not held memory"
    );
    assert!(!x.can_mut(), "the hold is a second holder");
    let binding = x.binding();
    drop(x);
    a.cleanup();
    assert!(
        a.with_memory(|mm| mm.get_cursor(binding)).is_err(),
        "released at once: B had finished everything it submitted"
    );
}

#[test]
fn record_use_on_the_owning_stream_is_a_no_op() {
    let device = host(1);
    let s = device.default_stream();
    let x = s.reserve(64).unwrap();
    s.record_use(&x).unwrap();
    assert!(x.can_mut());
    assert_eq!(s.held_bytes(), 0);
}

#[test]
fn a_recorded_use_follows_the_memory_through_bind() {
    let device = host(2);
    let (a, b) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let fresh = a.reserve(1024).unwrap();
    let tensor = a.reserve(1024).unwrap();
    b.record_use(&fresh).unwrap();
    b.submit();
    a.bind(fresh, tensor.clone()).unwrap();
    let binding = tensor.binding();
    drop(tensor);
    a.cleanup();
    assert_eq!(
        a.held_bytes(),
        1024,
        "B's use now guards the tensor's memory"
    );
    b.complete_through(1).unwrap();
    a.cleanup();
    assert_eq!(a.held_bytes(), 0);
    assert!(a.with_memory(|mm| mm.get_cursor(binding)).is_err());
}

#[test]
fn binding_a_reserved_handle_that_others_hold_is_refused() {
    let device = host(2);
    let (a, b) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let x = a.reserve(64).unwrap();
    let y = a.reserve(64).unwrap();
    b.record_use(&x).unwrap();
    b.submit();
    let err = a.bind(x.clone(), y.clone()).unwrap_err();
    assert!(
        matches!(err, GpuMemError::Pool(IoError::SharedReserved { .. })),
        "{err}"
    );
    assert!(!x.can_mut(), "the recorded use is kept");
    drop(x);
    a.cleanup();
    assert_eq!(a.held_bytes(), 64, "B has not finished its operation");
    drop(y);
}

#[test]
fn a_refused_bind_keeps_memory_held_for_another_streams_work() {
    let device = host(2);
    let (a, b) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    // A graph on A pins `out`: binding onto it is refused (AssignedPinned).
    let warmup = a.begin_capture().unwrap();
    drop(warmup.stream().reserve(4096).unwrap());
    let mut recording = warmup.start_recording().unwrap();
    let out = recording.stream().reserve(4096).unwrap();
    let view = a.view(&out).unwrap();
    recording.recorder().fill(0, view, 3).unwrap();
    let _graph = recording.end().unwrap();
    // B's submitted work reads `x`; its memory is held until that completes.
    let x = a.reserve(4096).unwrap();
    a.write(&x, &pattern(5, 4096)).unwrap();
    b.record_use(&x).unwrap();
    b.submit();
    let binding = x.binding();
    let err = a.bind(x, out.clone()).unwrap_err();
    assert!(
        matches!(err, GpuMemError::Pool(IoError::AssignedPinned { .. })),
        "{err}"
    );
    a.cleanup();
    assert_eq!(a.held_bytes(), 4096, "still held for B's work");
    assert_eq!(read_binding(&a, binding).unwrap(), pattern(5, 4096));
    b.complete_through(1).unwrap();
    a.cleanup();
    assert_eq!(a.held_bytes(), 0, "released once B's work completed");
}
