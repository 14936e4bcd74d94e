//! Streams run asynchronously and in order; freed memory reused under
//! queued work and allocation inside a capture are caught.

use cudarc::driver::sys::{self, CUstreamCaptureMode, cudaError_enum as E};

use crate::standin::{G, OK, prop, standin};

#[test]
fn queued_work_is_still_pending_when_the_host_goes_on_and_events_order_streams() {
    let Some(d) = standin() else { return };
    let (s1, s2) = (d.ctx.new_stream().unwrap(), d.ctx.new_stream().unwrap());
    let (mut a, mut b) = (0, 0);
    // SAFETY: live out-parameters.
    unsafe {
        assert_eq!(sys::cuMemAllocAsync(&mut a, 4096, s1.cu_stream()), OK);
        assert_eq!(sys::cuMemAllocAsync(&mut b, 4096, s1.cu_stream()), OK);
    }
    let before = d.violations();
    assert_eq!(d.kernel(&s1, a, 4096, 200, 0xAB), OK);
    assert_eq!(
        // SAFETY: the stream's own handle.
        unsafe { sys::cuStreamQuery(s1.cu_stream()) },
        E::CUDA_ERROR_NOT_READY
    );
    let done = s1.record_event(None).unwrap();
    assert!(!done.try_is_complete().unwrap(), "the kernel still sleeps");
    s2.wait(&done).unwrap();
    assert_eq!(
        // SAFETY: both live allocations; ordered after the kernel by the event.
        unsafe { sys::cuMemcpyDtoDAsync_v2(b, a, 4096, s2.cu_stream()) },
        OK
    );
    let mut back = vec![0u8; 4096];
    assert_eq!(
        // SAFETY: `back` outlives the synchronize below.
        unsafe { sys::cuMemcpyDtoHAsync_v2(back.as_mut_ptr().cast(), b, 4096, s2.cu_stream()) },
        OK
    );
    s2.synchronize().unwrap();
    assert!(
        back.iter().all(|&x| x == 0xAB),
        "the copy ran after the kernel"
    );
    // SAFETY: both allocations' work is done.
    unsafe {
        assert_eq!(sys::cuMemFreeAsync(a, s2.cu_stream()), OK);
        assert_eq!(sys::cuMemFreeAsync(b, s2.cu_stream()), OK);
    }
    s2.synchronize().unwrap();
    assert_eq!(d.since(before), Vec::<String>::new());
}

#[test]
fn memory_freed_and_reused_under_queued_work_is_caught_when_the_work_runs() {
    let Some(d) = standin() else { return };
    let (s1, s2) = (d.ctx.new_stream().unwrap(), d.ctx.new_stream().unwrap());
    let mut a = 0;
    assert_eq!(
        // SAFETY: live out-parameter.
        unsafe { sys::cuMemAllocAsync(&mut a, 1 << 20, s1.cu_stream()) },
        OK
    );
    s1.synchronize().unwrap();
    let before = d.violations();
    // Stream 2 will write `a` in 200 ms; stream 1 frees it now, with no
    // event between them (the seeded fault), and allocates again.
    assert_eq!(d.kernel(&s2, a, 1 << 20, 200, 1), OK);
    // SAFETY: seeded fault: `a` is still used by stream 2's queued kernel.
    assert_eq!(unsafe { sys::cuMemFreeAsync(a, s1.cu_stream()) }, OK);
    s1.synchronize().unwrap();
    let mut reused = 0;
    assert_eq!(
        // SAFETY: live out-parameter.
        unsafe { sys::cuMemAllocAsync(&mut reused, 1 << 20, s1.cu_stream()) },
        OK
    );
    assert_eq!(reused, a, "the pool hands the freed addresses out again");
    s2.synchronize().unwrap();
    let caught = d.since(before);
    assert_eq!(caught.len(), 1, "{caught:?}");
    assert!(
        caught[0].contains("stand-in kernel") && caught[0].contains("freed"),
        "{caught:?}"
    );
    // SAFETY: the new allocation, idle.
    assert_eq!(unsafe { sys::cuMemFreeAsync(reused, s1.cu_stream()) }, OK);
    s1.synchronize().unwrap();
}

#[test]
fn allocating_while_capturing_is_refused_and_invalidates_the_capture() {
    let Some(d) = standin() else { return };
    let stream = d.ctx.new_stream().unwrap();
    let before = d.violations();
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    let (mut p, mut h) = (0, 0);
    // SAFETY: live out-parameters; seeded faults inside the capture.
    unsafe {
        assert_eq!(
            sys::cuMemAlloc_v2(&mut p, 4096),
            E::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
        );
        assert_eq!(
            sys::cuMemCreate(&mut h, G, &prop(), 0),
            E::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
        );
    }
    let mut graph = std::ptr::null_mut();
    // SAFETY: the capturing stream; a live out-parameter.
    let ended = unsafe { sys::cuStreamEndCapture(stream.cu_stream(), &mut graph) };
    assert_eq!(ended, E::CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    let caught = d.since(before);
    assert_eq!(caught.len(), 2, "{caught:?}");
    assert!(caught.iter().all(|m| m.contains("capturing")), "{caught:?}");
    // Out of the capture, the same allocation is legal.
    // SAFETY: live out-parameter.
    assert_eq!(unsafe { sys::cuMemAlloc_v2(&mut p, 4096) }, OK);
    // SAFETY: just allocated, unused.
    assert_eq!(unsafe { sys::cuMemFree_v2(p) }, OK);
    assert_eq!(d.since(before).len(), 2);
}

#[test]
fn a_graph_replayed_over_memory_freed_since_its_capture_is_refused() {
    let Some(d) = standin() else { return };
    let stream = d.ctx.new_stream().unwrap();
    let mut p = 0;
    // SAFETY: live out-parameter.
    assert_eq!(unsafe { sys::cuMemAlloc_v2(&mut p, 4096) }, OK);
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    assert_eq!(
        // SAFETY: a live allocation, captured as a memset node.
        unsafe { sys::cuMemsetD8Async(p, 3, 4096, stream.cu_stream()) },
        OK
    );
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .unwrap();
    graph.launch().unwrap();
    stream.synchronize().unwrap();
    let before = d.violations();
    // SAFETY: seeded fault: the graph still names `p`.
    assert_eq!(unsafe { sys::cuMemFree_v2(p) }, OK);
    assert!(graph.launch().is_err(), "a launch over freed memory");
    assert_eq!(d.since(before).len(), 1, "{:?}", d.since(before));
}

#[test]
fn a_synchronous_copy_from_memory_freed_on_a_stream_is_refused_before_the_free_runs() {
    let Some(d) = standin() else { return };
    let stream = d.ctx.new_stream().unwrap();
    let mut a = 0;
    assert_eq!(
        // SAFETY: live out-parameter.
        unsafe { sys::cuMemAllocAsync(&mut a, 4096, stream.cu_stream()) },
        OK
    );
    // A kernel first, so the free behind it is still queued.
    assert_eq!(d.kernel(&stream, a, 4096, 100, 1), OK);
    // SAFETY: freed in stream order, after the kernel.
    assert_eq!(unsafe { sys::cuMemFreeAsync(a, stream.cu_stream()) }, OK);
    let before = d.violations();
    let mut back = [0u8; 16];
    assert_eq!(
        // SAFETY: seeded fault: `a` was freed on the stream, and the
        // default stream is not ordered after that free.
        unsafe { sys::cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), a, 16) },
        E::CUDA_ERROR_INVALID_VALUE
    );
    assert_eq!(
        // SAFETY: seeded fault: a second free of the same memory.
        unsafe { sys::cuMemFreeAsync(a, stream.cu_stream()) },
        E::CUDA_ERROR_INVALID_VALUE
    );
    stream.synchronize().unwrap();
    let caught = d.since(before);
    assert_eq!(caught.len(), 2, "{caught:?}");
    assert!(caught[0].contains("cuMemFreeAsync on stream"), "{caught:?}");
    assert!(caught[1].contains("already freed"), "{caught:?}");
}

#[test]
fn memory_freed_on_a_stream_is_allocated_again_on_it_while_the_free_is_still_queued() {
    let Some(d) = standin() else { return };
    let s = d.ctx.new_stream().unwrap();
    let (total, chunk) = (d.total(), 1u64 << 30);
    let mut first = 0;
    assert_eq!(
        // SAFETY: live out-parameter.
        unsafe { sys::cuMemAllocAsync(&mut first, 4096, s.cu_stream()) },
        OK
    );
    // Every free below queues behind this kernel, which sleeps for a
    // second: none has run when the device's memory runs out.
    assert_eq!(d.kernel(&s, first, 4096, 1000, 7), OK);
    let before = d.violations();
    for _ in 0..total / chunk + 4 {
        let mut p = 0;
        assert_eq!(
            // SAFETY: live out-parameter; stream order puts it after the
            // previous pair's free.
            unsafe { sys::cuMemAllocAsync(&mut p, chunk as usize, s.cu_stream()) },
            OK,
            "a pair on one stream reuses what the previous pair freed"
        );
        // SAFETY: nothing else uses `p`.
        assert_eq!(unsafe { sys::cuMemFreeAsync(p, s.cu_stream()) }, OK);
    }
    // SAFETY: the kernel's memory, freed after it in stream order.
    assert_eq!(unsafe { sys::cuMemFreeAsync(first, s.cu_stream()) }, OK);
    s.synchronize().unwrap();
    assert_eq!(d.since(before), Vec::<String>::new());
}
