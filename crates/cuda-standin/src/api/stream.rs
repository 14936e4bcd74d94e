//! Streams and events.
//!
//! Only non-blocking streams are made: the legacy default stream's
//! implicit synchronization with blocking streams is not modelled, so a
//! blocking stream is refused rather than made with the wrong ordering.

use std::sync::Arc;

use crate::capture::forbid;
use crate::driver::{DRIVER, current_device, entry, lock, ready};
use crate::event::Event;
use crate::memory::MEM;
use crate::stream::Stream;
use crate::types::*;
use crate::work::{HostFn, Raw, Work};

fn create(out: *mut u64, flags: u32) -> Outcome {
    let dev = current_device()?;
    if flags != STREAM_NON_BLOCKING {
        return Err(NOT_SUPPORTED);
    }
    let handle = DRIVER.handle();
    lock(&DRIVER.streams).insert(handle, Stream::spawn(handle, dev));
    // SAFETY: the caller's out-parameter (a CUstream).
    unsafe { put(out, handle) }
}

entry! { fn cuStreamCreate(stream: *mut u64, flags: u32) {
    create(stream, flags)
}}

entry! { fn cuStreamCreateWithPriority(stream: *mut u64, flags: u32, _priority: i32) {
    create(stream, flags)
}}

entry! { fn cuStreamDestroy_v2(stream: u64) {
    ready()?;
    if stream <= 2 {
        return Err(INVALID_HANDLE);
    }
    let s = lock(&DRIVER.streams).remove(&stream).ok_or(INVALID_HANDLE)?;
    // Queued work still runs; the worker ends when the queue is empty.
    let mut st = lock(&s.state);
    st.destroyed = true;
    s.cv.notify_all();
    Ok(())
}}

/// The capturing stream itself cannot be waited for.
fn not_capturing(s: &Stream, what: &str) -> Outcome {
    if lock(&s.state).capture.is_some() {
        let handle = s.handle;
        if let Some(c) = lock(&s.state).capture.as_mut() {
            c.invalidate();
        }
        crate::driver::violation(format!("{what} of stream {handle:#x} while it captures"));
        return Err(STREAM_CAPTURE_UNSUPPORTED);
    }
    Ok(())
}

entry! { fn cuStreamSynchronize(stream: u64) {
    ready()?;
    let s = DRIVER.stream(stream)?;
    not_capturing(&s, "cuStreamSynchronize")?;
    s.drain();
    lock(&MEM).release_pool_cache();
    Ok(())
}}

entry! { fn cuStreamQuery(stream: u64) {
    ready()?;
    let s = DRIVER.stream(stream)?;
    not_capturing(&s, "cuStreamQuery")?;
    if s.idle() { Ok(()) } else { Err(NOT_READY) }
}}

entry! { fn cuStreamWaitEvent(stream: u64, event: u64, flags: u32) {
    ready()?;
    if flags != 0 {
        return Err(NOT_SUPPORTED);
    }
    let s = DRIVER.stream(stream)?;
    let e = DRIVER.event(event)?;
    if *lock(&e.captured) {
        // Joining another stream into a capture is not modelled.
        return Err(NOT_SUPPORTED);
    }
    let mut st = lock(&s.state);
    if let Some(capture) = st.capture.as_mut() {
        // An event recorded outside the capture: already ordered before
        // the graph's launches by the host, so the node waits for nothing.
        capture.nodes.push(Raw::Marker(node::WAIT_EVENT));
        return Ok(());
    }
    if let Some((other, upto)) = e.point() {
        let what = format!("wait on event {event:#x} on stream {stream:#x}");
        let wait = Box::new(move || other.wait_for(upto));
        s.push(&mut st, Work::Wait(wait), what);
    }
    Ok(())
}}

entry! { fn cuLaunchHostFunc(stream: u64, f: Option<HostFn>, data: *mut std::ffi::c_void) {
    ready()?;
    let f = f.ok_or(INVALID_VALUE)?;
    let raw = Raw::Host { f, data: data as usize };
    DRIVER.stream(stream)?.submit(raw, format!("host function on stream {stream:#x}"))
}}

entry! { fn cuEventCreate(event: *mut u64, _flags: u32) {
    ready()?;
    let handle = DRIVER.handle();
    lock(&DRIVER.events).insert(handle, Arc::new(Event::default()));
    // SAFETY: the caller's out-parameter (a CUevent).
    unsafe { put(event, handle) }
}}

entry! { fn cuEventRecord(event: u64, stream: u64) {
    ready()?;
    let e = DRIVER.event(event)?;
    let s = DRIVER.stream(stream)?;
    let mut st = lock(&s.state);
    if let Some(capture) = st.capture.as_mut() {
        capture.nodes.push(Raw::Marker(node::EVENT_RECORD));
        *lock(&e.captured) = true;
        return Ok(());
    }
    *lock(&e.captured) = false;
    *lock(&e.at) = Some((s.clone(), st.submitted));
    Ok(())
}}

entry! { fn cuEventQuery(event: u64) {
    ready()?;
    if DRIVER.event(event)?.is_complete() { Ok(()) } else { Err(NOT_READY) }
}}

entry! { fn cuEventSynchronize(event: u64) {
    ready()?;
    let e = DRIVER.event(event)?;
    if *lock(&e.captured) {
        forbid("cuEventSynchronize of an event recorded in a capture")?;
    }
    e.synchronize();
    lock(&MEM).release_pool_cache();
    Ok(())
}}

entry! { fn cuEventDestroy_v2(event: u64) {
    ready()?;
    lock(&DRIVER.events).remove(&event).map(drop).ok_or(INVALID_HANDLE)
}}
