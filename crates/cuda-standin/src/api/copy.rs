//! Copies and memsets: queued on their stream (the synchronous forms on
//! the default stream, then waited for). Every device range must be live,
//! accessible memory when queued and still be when the work runs.

use std::ffi::c_void;

use crate::capture::forbid;
use crate::driver::{DRIVER, entry, ready};
use crate::types::*;
use crate::work::{Raw, RawPlace};

pub(crate) fn submit(stream: u64, raw: Raw, what: String) -> Outcome {
    ready()?;
    DRIVER.stream(stream)?.submit(raw, what)
}

/// A synchronous call: on the default stream, then wait for it.
pub(crate) fn blocking(raw: Raw, what: String) -> Outcome {
    ready()?;
    forbid(&what)?;
    let s = DRIVER.stream(0)?;
    s.submit(raw, what)?;
    s.drain();
    Ok(())
}

fn copy(dst: RawPlace, src: RawPlace, len: usize) -> Raw {
    Raw::Copy {
        dst,
        src,
        len: len as u64,
    }
}

entry! { fn cuMemcpyHtoDAsync_v2(dst: DevPtr, src: *const c_void, len: usize, stream: u64) {
    let raw = copy(RawPlace::Device(dst), RawPlace::Host(src as usize), len);
    submit(stream, raw, format!("copy host to {dst:#x}..+{len} on stream {stream:#x}"))
}}

entry! { fn cuMemcpyDtoHAsync_v2(dst: *mut c_void, src: DevPtr, len: usize, stream: u64) {
    let raw = copy(RawPlace::Host(dst as usize), RawPlace::Device(src), len);
    submit(stream, raw, format!("copy {src:#x}..+{len} to host on stream {stream:#x}"))
}}

entry! { fn cuMemcpyDtoDAsync_v2(dst: DevPtr, src: DevPtr, len: usize, stream: u64) {
    let raw = copy(RawPlace::Device(dst), RawPlace::Device(src), len);
    submit(stream, raw, format!("copy {src:#x} to {dst:#x} ({len} B) on stream {stream:#x}"))
}}

entry! { fn cuMemsetD8Async(dst: DevPtr, value: u8, len: usize, stream: u64) {
    let raw = Raw::Fill { dst, len: len as u64, value };
    submit(stream, raw, format!("memset {dst:#x}..+{len} on stream {stream:#x}"))
}}

entry! { fn cuMemcpyHtoD_v2(dst: DevPtr, src: *const c_void, len: usize) {
    let raw = copy(RawPlace::Device(dst), RawPlace::Host(src as usize), len);
    blocking(raw, format!("cuMemcpyHtoD to {dst:#x}..+{len}"))
}}

entry! { fn cuMemcpyDtoH_v2(dst: *mut c_void, src: DevPtr, len: usize) {
    let raw = copy(RawPlace::Host(dst as usize), RawPlace::Device(src), len);
    blocking(raw, format!("cuMemcpyDtoH from {src:#x}..+{len}"))
}}

entry! { fn cuMemcpyDtoD_v2(dst: DevPtr, src: DevPtr, len: usize) {
    let raw = copy(RawPlace::Device(dst), RawPlace::Device(src), len);
    blocking(raw, format!("cuMemcpyDtoD {src:#x} to {dst:#x} ({len} B)"))
}}

entry! { fn cuMemsetD8_v2(dst: DevPtr, value: u8, len: usize) {
    let raw = Raw::Fill { dst, len: len as u64, value };
    blocking(raw, format!("cuMemsetD8 {dst:#x}..+{len}"))
}}
