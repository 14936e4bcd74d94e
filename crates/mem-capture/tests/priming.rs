//! Priming and the window: the warmup grows the pool to the working set,
//! the recorded pass allocates nothing, and what it cannot serve is named.

mod common;

use common::fixtures::{assert_restored, expected, input};
use common::pass::{pass, replay_read};
use common::*;
use mem_capture::{Capture, CaptureError, HostGraphBackend};
use mem_pools::IoError;

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
        matches!(
            err,
            CaptureError::Engine(IoError::CaptureWouldAllocate { size: 8192, .. })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("lengthen the warmup"), "{err}");
    assert_restored(&mut dev, &backend, &capture, 0);
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
