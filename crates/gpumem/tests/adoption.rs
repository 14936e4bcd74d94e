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

/// A CUDA device's stream 0 is the context's legacy default stream, which
/// CUDA cannot capture: a CUDA graph capture of it is a typed error that
/// leaves the stream usable, and another stream captures.
#[test]
fn a_cuda_graph_capture_of_the_legacy_default_stream_is_refused_and_changes_nothing() {
    use gpumem::capture::cuda::CudaGraphBackend;
    let Ok(builder) = Device::cuda(0) else {
        println!("skipping: no CUDA device");
        return;
    };
    let device = builder.streams(2).ignore_env().build().unwrap();
    let (s0, s1) = (device.stream(0).unwrap(), device.stream(1).unwrap());
    assert!(
        s0.cuda_stream().unwrap().cu_stream().is_null(),
        "stream 0 is the default stream"
    );
    // SAFETY: the captures make no CudaSlice.
    let backend = unsafe { CudaGraphBackend::new(s0.cuda_stream().unwrap()) };
    let warmup = s0.begin_capture_with(backend).unwrap();
    let err = warmup.start_recording().map(drop).unwrap_err();
    assert!(err.to_string().contains("legacy default"), "{err}");
    let h = s0.reserve(MIB).unwrap();
    s0.write(&h, &pattern(2, 4096)).unwrap();
    assert_eq!(read(&s0, &h, 4096), pattern(2, 4096));
    // SAFETY: as above.
    let backend = unsafe { CudaGraphBackend::new(s1.cuda_stream().unwrap()) };
    let warmup = s1.begin_capture_with(backend).unwrap();
    drop(warmup.stream().reserve(4096).unwrap());
    let mut recording = warmup.start_recording().unwrap();
    let out = recording.stream().reserve(4096).unwrap();
    {
        let ptr = s1.device_ptr(&out).unwrap();
        let on = recording.recorder().clone();
        // SAFETY: `out` is a live 4 KiB gpumem allocation, pinned by its
        // guard while recorded and by the graph after.
        unsafe {
            gpumem::device::cudarc::driver::result::memset_d8_async(
                ptr.as_raw(),
                0x11,
                4096,
                on.cu_stream(),
            )
        }
        .unwrap();
    }
    let mut graph = recording.end().unwrap();
    graph.replay().unwrap();
    s1.synchronize().unwrap();
    assert_eq!(read(&s1, &out, 4096), vec![0x11; 4096]);
}

/// While a CUDA graph captures a stream, a host write, read or
/// synchronize on that stream (from any thread) cannot be captured: it is
/// refused with a typed error, and the capture goes on. (Before, the copy
/// became a node of the graph over a borrowed host buffer and the wait
/// invalidated the capture: the stand-in driver's stress run found it.)
#[test]
fn a_host_transfer_on_a_stream_a_cuda_graph_captures_is_refused_and_the_capture_survives() {
    use gpumem::capture::cuda::CudaGraphBackend;
    let Ok(builder) = Device::cuda(0) else {
        println!("skipping: no CUDA device");
        return;
    };
    let device = builder
        .pools(growable())
        .streams(2)
        .ignore_env()
        .build()
        .unwrap();
    let s1 = device.stream(1).unwrap();
    let h = s1.reserve(64 * KIB).unwrap();
    s1.write(&h, &pattern(4, 4096)).unwrap();
    // SAFETY: the capture makes no CudaSlice.
    let backend = unsafe { CudaGraphBackend::new(s1.cuda_stream().unwrap()) };
    let warmup = s1.begin_capture_with(backend).unwrap();
    drop(warmup.stream().reserve(4096).unwrap());
    let recording = warmup.start_recording().unwrap();
    let refused = |what: &str, err: GpuMemError| {
        assert!(
            err.to_string().contains("CUDA graph is capturing"),
            "{what}: {err}"
        );
    };
    let other = std::thread::scope(|scope| {
        scope
            .spawn(|| s1.write(&h, &pattern(5, 4096)))
            .join()
            .unwrap()
    });
    refused("a write from another thread", other.unwrap_err());
    let mut back = vec![0; 4096];
    refused("a read", s1.read(&h, &mut back).unwrap_err());
    refused("a synchronize", s1.synchronize().unwrap_err());
    let mut graph = recording.end().expect("the capture was not invalidated");
    graph.replay().unwrap();
    drop(graph);
    s1.synchronize().unwrap();
    assert_eq!(read(&s1, &h, 4096), pattern(4, 4096), "nothing was written");
}
