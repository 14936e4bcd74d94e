//! Launches and moves: a launch holds the device's moving lock shared, so
//! no relocation moves a buffer between reading its address and counting
//! the work that uses it.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use common::*;
use gpumem::prelude::*;

fn growable_device(streams: usize) -> Device {
    Device::host()
        .pools(growable())
        .streams(streams)
        .ignore_env()
        .build()
        .unwrap()
}

#[test]
fn a_relocation_racing_a_launch_waits_for_it_and_finishes_its_work_before_moving() {
    let device = growable_device(2);
    let (s0, s1) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    // A live slice on an outdated page of stream 1: the relocation moves it.
    let old = s1.reserve(10 * KIB).unwrap();
    s1.write(&old, &pattern(7, 10 * KIB as usize)).unwrap();
    let _big = s1.reserve(100 * KIB).unwrap();
    assert!(s1.with_memory(|mm| mm.has_outdated()));

    let launch = s0.launch(&[&old]).unwrap();
    let view = launch.view(&old).unwrap();
    let moved = AtomicBool::new(false);
    thread::scope(|scope| {
        let relocation = scope.spawn(|| {
            let summary = device.relocate(RelocationReason::Explicit).unwrap();
            moved.store(true, Ordering::SeqCst);
            summary
        });
        thread::sleep(Duration::from_millis(200));
        assert!(
            !moved.load(Ordering::SeqCst),
            "the relocation moved memory while a launch read its address"
        );
        let op = launch.submit();
        let summary = relocation.join().unwrap();
        assert_eq!(summary.moved_slices, 1);
        assert!(
            s0.completed() >= op,
            "the relocation moved the buffer under launched work it did not finish"
        );
    });
    assert_ne!(
        s1.view(&old).unwrap(),
        view,
        "the buffer moved after the launch"
    );
    assert_eq!(
        read(&s1, &old, 10 * KIB as usize),
        pattern(7, 10 * KIB as usize)
    );
}

#[test]
fn a_launch_records_the_use_of_another_streams_buffer_until_its_work_completes() {
    let device = host(2);
    let (s0, s1) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let buffer = s1.reserve(4 * KIB).unwrap();
    let launch = s0.launch(&[&buffer]).unwrap();
    let op = launch.submit();
    assert_eq!(op, 1);
    drop(buffer);
    assert_eq!(
        s1.held_bytes(),
        4 * KIB,
        "stream 1 holds it for stream 0's work"
    );
    s0.complete_through(op).unwrap();
    s1.cleanup();
    assert_eq!(s1.held_bytes(), 0);
}

#[test]
fn moving_memory_on_the_launching_thread_is_refused_instead_of_waiting_for_itself() {
    let device = host(1);
    let stream = device.default_stream();
    let buffer = stream.reserve(4 * KIB).unwrap();
    let launch = stream.launch(&[&buffer]).unwrap();
    for err in [
        device.relocate(RelocationReason::Explicit).unwrap_err(),
        device.reclaim().unwrap_err(),
        stream.reclaim().unwrap_err(),
        device.sleep(SleepContents::Discard).unwrap_err(),
        stream.begin_capture().map(|_| ()).unwrap_err(),
        stream.launch(&[&buffer]).map(|_| ()).unwrap_err(),
    ] {
        assert!(matches!(err, GpuMemError::LaunchOpen { .. }), "{err}");
    }
    launch.submit();
    device.relocate(RelocationReason::Explicit).unwrap();
}

#[test]
fn a_launch_of_a_buffer_of_another_device_is_refused() {
    let (a, b) = (host(1), host(1));
    let foreign = b.default_stream().reserve(KIB).unwrap();
    let err = a.default_stream().launch(&[&foreign]).unwrap_err();
    assert!(matches!(err, GpuMemError::ForeignHandle { .. }), "{err}");
}
