//! What a runtime adopting gpumem holds instead of remembering to undo a
//! call: device-pointer guards, persistent windows, `drain`, and its own
//! CUDA context and streams.

mod common;

use common::*;
use gpumem::prelude::*;

fn paged(streams: usize) -> Device {
    Device::host()
        .pools(growable())
        .streams(streams)
        .ignore_env()
        .build()
        .unwrap()
}

#[test]
fn a_device_pointer_guard_pins_the_memory_until_it_drops() {
    let device = paged(1);
    let s = device.default_stream();
    let old = s.reserve(10 * KIB).unwrap();
    s.write(&old, &pattern(3, 1024)).unwrap();
    let _big = s.reserve(100 * KIB).unwrap(); // `old`'s page is outdated now
    let guard = s.device_ptr(&old).unwrap();
    assert_eq!(guard.len(), 10 * KIB);
    let before = s.view(&old).unwrap();
    let moved = device.relocate(RelocationReason::Explicit).unwrap();
    assert_eq!(moved.moved_slices, 0, "a pinned allocation does not move");
    assert_eq!(s.view(&old).unwrap(), before);
    let address = guard.as_raw();
    drop(guard); // on any thread; processed at the stream's next call
    s.drain();
    let moved = device.relocate(RelocationReason::Explicit).unwrap();
    assert_eq!(moved.moved_slices, 1, "unpinned: it moves again");
    assert_ne!(s.device_ptr(&old).unwrap().as_raw(), address);
    assert_eq!(read(&s, &old, 1024), pattern(3, 1024));
}

#[test]
fn a_device_pointer_follows_a_rebound_handle_and_a_foreign_one_is_an_error() {
    let device = host(1);
    let s = device.default_stream();
    let h = s.reserve(64).unwrap();
    let stale = h.clone();
    let fresh = s.reserve(64).unwrap();
    s.bind(fresh, h).unwrap(); // `stale` still names it: fine
    assert!(s.device_ptr(&stale).is_ok());
    let other = host(1);
    assert!(
        other.default_stream().device_ptr(&stale).is_err(),
        "foreign"
    );
}

#[test]
fn a_persistent_window_closes_when_its_guard_drops() {
    let device = paged(2);
    let (a, b) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    let pools = |s: &Stream| s.memory_report().pools.len();
    let persistent = |s: &Stream| s.memory_report().pools[pools(s) - 1].slices;
    {
        let _window = a.persistent();
        let _w = a.reserve(4096).unwrap();
        assert_eq!(persistent(&a), 1, "served by the persistent pool");
        let _x = b.reserve(4096).unwrap();
        assert_eq!(persistent(&b), 0, "another stream is not in the window");
    }
    let _y = a.reserve(4096).unwrap();
    assert_eq!(persistent(&a), 0, "the window closed with its guard");
    {
        let _all = device.persistent();
        let _z = b.reserve(4096).unwrap();
        assert_eq!(persistent(&b), 1);
    }
}

#[test]
fn a_runtime_brings_its_own_cuda_context_and_streams() {
    if !gpumem::storage::cuda_available() {
        println!("skipping: the CUDA driver library (libcuda) cannot be loaded");
        return;
    }
    let ctx = match gpumem::device::cudarc::driver::CudaContext::new(0) {
        Ok(ctx) => ctx,
        Err(err) => {
            println!("skipping: no CUDA device ({err})");
            return;
        }
    };
    let (s0, s1) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let device = Device::cuda_from_context(ctx.clone())
        .unwrap()
        .cuda_streams(vec![s0.clone(), s1.clone()])
        .ignore_env()
        .build()
        .unwrap();
    assert_eq!(device.stream_count(), 2);
    let stream = device.stream(1).unwrap();
    assert_eq!(
        stream.cuda_stream().unwrap().cu_stream(),
        s1.cu_stream(),
        "stream 1 is the runtime's own"
    );
    let h = stream.reserve(MIB).unwrap();
    stream.write(&h, &pattern(1, 4096)).unwrap();
    let ptr = stream.device_ptr(&h).unwrap();
    assert_ne!(ptr.as_raw(), 0);
    assert_eq!(read(&stream, &h, 4096), pattern(1, 4096));
}
