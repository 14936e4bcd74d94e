//! Streams driven from several threads, handles dropped on others.

mod common;

use std::sync::mpsc;
use std::thread;

use common::{host, pattern};
use gpumem::prelude::*;

#[test]
fn devices_streams_and_handles_can_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Device>();
    send_sync::<Stream>();
    send_sync::<ManagedMemoryHandle>();
}

#[test]
fn streams_driven_from_threads_keep_every_figure_consistent() {
    let device = host(4);
    let (to_dropper, dropped) = mpsc::channel::<ManagedMemoryHandle>();
    thread::scope(|scope| {
        scope.spawn(move || {
            // Frees arrive from a thread that owns no stream.
            for handle in dropped {
                drop(handle);
            }
        });
        for stream in device.streams() {
            let to_dropper = to_dropper.clone();
            let other = device.stream((stream.index() + 1) % 4).unwrap();
            scope.spawn(move || {
                let mut kept = Vec::new();
                for i in 0..300u64 {
                    let size = 64 + (i * 977 + stream.index() as u64 * 131) % (96 * 1024);
                    let handle = stream.reserve(size).unwrap();
                    let len = size.min(512) as usize;
                    stream.write(&handle, &pattern(i, len)).unwrap();
                    match i % 3 {
                        0 => kept.push((handle, i, len)),
                        1 => {
                            other.record_use(&handle).unwrap();
                            other.submit();
                            to_dropper.send(handle).unwrap();
                        }
                        _ => drop(handle),
                    }
                    if i % 50 == 0 {
                        other.synchronize().unwrap();
                    }
                }
                for (handle, seed, len) in &kept {
                    let mut out = vec![0; *len];
                    stream.read(handle, &mut out).unwrap();
                    assert_eq!(out, pattern(*seed, *len), "a kept buffer changed");
                }
            });
        }
        drop(to_dropper);
    });
    device.synchronize().unwrap();
    for s in device.streams() {
        s.cleanup();
    }
    let stats = device.stats();
    let sum: u64 = device
        .streams()
        .iter()
        .map(|s| s.stats().requested_bytes.current)
        .sum();
    assert_eq!(stats.requested_bytes.current, sum);
    assert_eq!(stats.requested_bytes.current, 0, "every buffer was dropped");
    assert_eq!(device.budget().charged(), stats.reserved_bytes.current);
    device.reclaim().unwrap();
    assert_eq!(device.budget().charged(), 0);
}

/// Begin a capture on every stream of `device` from its own thread at once;
/// whether each began, read while every capture that began is still open.
fn captures_begun_at_once(device: &Device) -> Vec<bool> {
    use std::sync::Barrier;
    let streams = device.streams();
    let (start, attempted) = (Barrier::new(streams.len()), Barrier::new(streams.len()));
    thread::scope(|scope| {
        let workers: Vec<_> = streams
            .into_iter()
            .map(|stream| {
                let (start, attempted) = (&start, &attempted);
                scope.spawn(move || {
                    start.wait();
                    let warmup = stream.begin_capture();
                    attempted.wait(); // every capture that began still records here
                    warmup.is_ok()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    })
}

#[test]
fn captures_begun_at_once_on_arenas_all_record_and_leave_nothing_marked() {
    let device = host(3);
    assert_eq!(captures_begun_at_once(&device), vec![true; 3]);
    assert!(device.memory_report().streams.iter().all(|s| !s.recording));
}

#[test]
fn captures_begun_at_once_on_paged_pools_relocate_once_and_all_record() {
    let device = Device::host()
        .pools(common::growable())
        .streams(2)
        .ignore_env()
        .build()
        .unwrap();
    let mut held = Vec::new();
    for stream in device.streams() {
        held.push(stream.reserve(10 * KIB).unwrap());
        held.push(stream.reserve(100 * KIB).unwrap()); // leaves a page outdated
        assert!(stream.with_memory(|mm| mm.has_outdated()));
    }
    // The gate makes one capture check and relocate first; the other then
    // finds nothing outdated and may begin beside it.
    assert_eq!(captures_begun_at_once(&device), vec![true; 2]);
    for stream in device.streams() {
        assert!(!stream.with_memory(|mm| mm.has_outdated()));
    }
    assert!(device.memory_report().streams.iter().all(|s| !s.recording));
}
