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

#[test]
fn of_two_captures_begun_at_once_exactly_one_records() {
    use std::sync::Barrier;
    let device = host(2);
    let (start, attempted) = (Barrier::new(2), Barrier::new(2));
    let outcomes: Vec<bool> = thread::scope(|scope| {
        let workers: Vec<_> = device
            .streams()
            .into_iter()
            .map(|stream| {
                let (start, attempted) = (&start, &attempted);
                scope.spawn(move || {
                    start.wait();
                    let warmup = stream.begin_capture();
                    attempted.wait(); // the winner still records here
                    warmup.is_ok()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    assert_eq!(outcomes.iter().filter(|&&ok| ok).count(), 1, "{outcomes:?}");
    assert!(device.memory_report().streams.iter().all(|s| !s.recording));
}
