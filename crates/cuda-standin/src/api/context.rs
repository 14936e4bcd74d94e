//! Initialization, the devices (`device.rs`), their primary contexts,
//! error strings.

use std::ffi::c_char;
use std::sync::atomic::Ordering;

use crate::device::{self, context, of_context};
use crate::driver::{CURRENT, DRIVER, current_device, entry, lock};
use crate::memory::MEM;
use crate::types::*;

const DEVICE_NAME: &[u8] = b"gpumem stand-in CUDA driver (host memory)\0";
/// `cuDriverGetVersion`: CUDA 12.8, what the workspace's cudarc binds.
const DRIVER_VERSION: i32 = 12080;

/// Attributes this device answers; any other is refused, never made up.
fn attribute(attr: u32) -> Option<i32> {
    Some(match attr {
        1 => 1024,      // max threads per block
        2 => 1024,      // max block dim x
        3 | 4 => 64,    // max block dim y, z
        5 => i32::MAX,  // max grid dim x
        6 | 7 => 65535, // max grid dim y, z
        8 => 48 << 10,  // shared memory per block
        10 => 32,       // warp size
        16 => 4,        // multiprocessors
        41 => 1,        // unified addressing
        75 => 8,        // compute capability major
        76 => 0,        // compute capability minor
        102 => 1,       // virtual memory management
        103 => 1,       // POSIX file descriptor handles
        104 | 105 => 0, // Win32 handles
        110 => 1,       // GPUDirect RDMA with VMM allocations
        128 => 0,       // fabric handles (no NVLink fabric: callers fall back)
        115 => i32::from(crate::driver::MEMORY_POOLS.load(Ordering::Acquire)), // memory pools
        _ => return None,
    })
}

fn device(dev: i32) -> Result<usize, CuResult> {
    if !DRIVER.initialized.load(Ordering::Acquire) {
        return Err(NOT_INITIALIZED);
    }
    device::valid(dev)
}

entry! { fn cuInit(flags: u32) {
    if flags != 0 {
        return Err(INVALID_VALUE);
    }
    if std::env::var("GPUMEM_STANDIN_MEMORY_POOLS").is_ok_and(|v| v == "0") {
        crate::driver::MEMORY_POOLS.store(false, Ordering::Release);
    }
    DRIVER.initialized.store(true, Ordering::Release);
    Ok(())
}}

entry! { fn cuDriverGetVersion(version: *mut i32) {
    // SAFETY: the caller's out-parameter (the entry's contract).
    unsafe { put(version, DRIVER_VERSION) }
}}

entry! { fn cuDeviceGetCount(count: *mut i32) {
    if !DRIVER.initialized.load(Ordering::Acquire) {
        return Err(NOT_INITIALIZED);
    }
    // SAFETY: the caller's out-parameter.
    unsafe { put(count, device::count()) }
}}

entry! { fn cuDeviceGet(dev: *mut i32, ordinal: i32) {
    device(ordinal)?;
    // SAFETY: the caller's out-parameter.
    unsafe { put(dev, ordinal) }
}}

entry! { fn cuDeviceGetName(name: *mut c_char, len: i32, dev: i32) {
    device(dev)?;
    let len = usize::try_from(len).map_err(|_| INVALID_VALUE)?;
    if name.is_null() || len == 0 {
        return Err(INVALID_VALUE);
    }
    let n = DEVICE_NAME.len().min(len);
    // SAFETY: `name` holds `len` bytes (the contract); `n <= len`.
    unsafe {
        std::ptr::copy_nonoverlapping(DEVICE_NAME.as_ptr().cast(), name, n);
        *name.add(n - 1) = 0;
    }
    Ok(())
}}

entry! { fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: i32) {
    let dev = device(dev)?;
    let total = lock(&MEM).devices[dev].total as usize;
    // SAFETY: the caller's out-parameter.
    unsafe { put(bytes, total) }
}}

entry! { fn cuDeviceGetAttribute(value: *mut i32, attr: u32, dev: i32) {
    device(dev)?;
    let v = attribute(attr).ok_or(NOT_SUPPORTED)?;
    // SAFETY: the caller's out-parameter.
    unsafe { put(value, v) }
}}

entry! { fn cuDevicePrimaryCtxRetain(ctx: *mut u64, dev: i32) {
    let dev = device(dev)?;
    DRIVER.context_refs[dev].fetch_add(1, Ordering::AcqRel);
    // SAFETY: the caller's out-parameter (a CUcontext, pointer-sized).
    unsafe { put(ctx, context(dev)) }
}}

entry! { fn cuDevicePrimaryCtxRelease_v2(dev: i32) {
    let dev = device(dev)?;
    let refs = &DRIVER.context_refs[dev];
    let before = refs.fetch_sub(1, Ordering::AcqRel);
    if before <= 0 {
        refs.fetch_add(1, Ordering::AcqRel);
        return Err(INVALID_CONTEXT);
    }
    Ok(())
}}

entry! { fn cuCtxSetCurrent(ctx: u64) {
    if !DRIVER.initialized.load(Ordering::Acquire) {
        return Err(NOT_INITIALIZED);
    }
    if ctx != 0 && of_context(ctx).is_none() {
        return Err(INVALID_CONTEXT);
    }
    CURRENT.set(ctx);
    Ok(())
}}

entry! { fn cuCtxGetCurrent(ctx: *mut u64) {
    if !DRIVER.initialized.load(Ordering::Acquire) {
        return Err(NOT_INITIALIZED);
    }
    // SAFETY: the caller's out-parameter.
    unsafe { put(ctx, CURRENT.get()) }
}}

entry! { fn cuCtxGetDevice(dev: *mut i32) {
    let current = current_device()?;
    // SAFETY: the caller's out-parameter.
    unsafe { put(dev, current as i32) }
}}

entry! { fn cuCtxSynchronize() {
    let dev = current_device()?;
    crate::capture::forbid("cuCtxSynchronize")?;
    for stream in DRIVER.streams_of(dev) {
        stream.drain();
    }
    lock(&MEM).release_pool_cache();
    Ok(())
}}

fn error_text(error: u32, name: bool, out: *mut *const c_char) -> Outcome {
    let (_, n, d) = ERRORS
        .iter()
        .find(|(code, _, _)| *code == error)
        .ok_or(INVALID_VALUE)?;
    let text = if name { n } else { d };
    // SAFETY: the caller's out-parameter; the strings are static and
    // NUL-terminated.
    unsafe { put(out, text.as_ptr().cast()) }
}

entry! { fn cuGetErrorString(error: u32, out: *mut *const c_char) {
    error_text(error, false, out)
}}

entry! { fn cuGetErrorName(error: u32, out: *mut *const c_char) {
    error_text(error, true, out)
}}
