//! The stand-in's own exports, for tests (read with `dlsym`; a real driver
//! has none of them, so a test finding them absent knows it runs on a GPU).

use std::ffi::{CStr, c_char};

use crate::driver::{DRIVER, entry, lock, ready};
use crate::types::*;
use crate::work::Raw;

/// The stand-in's interface version (present only in the stand-in); 2:
/// several devices, shared chunks, announced violations, failed calls.
#[unsafe(no_mangle)]
pub extern "C" fn gpumem_standin_version() -> u32 {
    2
}

/// How many contract violations were recorded so far.
#[unsafe(no_mangle)]
pub extern "C" fn gpumem_standin_violations() -> u64 {
    lock(&crate::sync::VIOLATIONS).len() as u64
}

/// Copy violation `index`'s message (NUL-terminated, cut to `cap` bytes)
/// into `out`; returns its full length, or 0 when there is no such one.
///
/// # Safety
/// `out` is null or valid for `cap` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpumem_standin_violation_message(
    index: u64,
    out: *mut u8,
    cap: usize,
) -> usize {
    let violations = lock(&crate::sync::VIOLATIONS);
    let Some(message) = violations.get(index as usize) else {
        return 0;
    };
    if !out.is_null() && cap > 0 {
        let n = message.len().min(cap - 1);
        // SAFETY: `out` holds `cap` bytes (the contract) and `n < cap`.
        unsafe {
            std::ptr::copy_nonoverlapping(message.as_ptr(), out, n);
            *out.add(n) = 0;
        }
    }
    message.len()
}

/// How many times entry point `name` (e.g. `cuMemMap`) succeeded.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpumem_standin_calls(name: *const c_char) -> u64 {
    if name.is_null() {
        return 0;
    }
    // SAFETY: a NUL-terminated string (the contract).
    let name = unsafe { CStr::from_ptr(name) };
    let calls = lock(&DRIVER.calls);
    name.to_str()
        .ok()
        .and_then(|n| calls.get(n))
        .copied()
        .unwrap_or(0)
}

/// Whether the device reports memory pools (`0`: it does not, as some
/// devices and virtualized GPUs; `cuMemAllocAsync` is then refused). For
/// tests of gpumem's synchronous allocation mode; contexts opened before
/// the switch keep what they read.
#[unsafe(no_mangle)]
pub extern "C" fn gpumem_standin_set_memory_pools(enabled: u32) {
    crate::driver::MEMORY_POOLS.store(enabled != 0, std::sync::atomic::Ordering::Release);
}

/// Announce one violation whose message contains `text` (a
/// NUL-terminated string): it is recorded and counted as any other, but
/// does not abort under `GPUMEM_STANDIN_ABORT=1`. For a test that passes a
/// driver input gpumem cannot check beforehand (a descriptor a peer sent,
/// which may be another file) and expects the driver's refusal.
///
/// # Safety
/// `text` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpumem_standin_expect_violation(text: *const c_char) {
    if text.is_null() {
        return;
    }
    // SAFETY: a NUL-terminated string (the contract).
    let text = unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned();
    lock(&crate::sync::EXPECTED).push(text);
}

/// Make a later call of entry point `name` (a NUL-terminated string, e.g.
/// `cuMemExportToShareableHandle`) fail with `code` before it does
/// anything: the calls of it after `skip` more go through. For tests of
/// how gpumem takes a driver's refusal of any call (nothing mapped,
/// charged or leaked); a failed call is not a violation.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gpumem_standin_fail_call(name: *const c_char, skip: u64, code: u32) {
    if name.is_null() || code == SUCCESS {
        return;
    }
    // SAFETY: a NUL-terminated string (the contract).
    let name = unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned();
    lock(&crate::driver::FAILS).push((name, skip, code));
}

/// Forget the call counts (violations are never forgotten).
#[unsafe(no_mangle)]
pub extern "C" fn gpumem_standin_reset_calls() {
    lock(&DRIVER.calls).clear();
}

entry! {
    /// The stand-in kernel: queued on `stream`, it sleeps `sleep_us` and
    /// then writes `value` over `ptr..ptr+bytes` (so a test can keep work
    /// pending and catch memory taken away under it).
    fn gpumem_standin_kernel(stream: u64, ptr: DevPtr, bytes: usize, sleep_us: u64, value: u8) {
        ready()?;
        let raw = Raw::Kernel { dst: ptr, len: bytes as u64, sleep_us, value };
        let what = format!("stand-in kernel over {ptr:#x}..+{bytes} on stream {stream:#x}");
        DRIVER.stream(stream)?.submit(raw, what)
    }
}
