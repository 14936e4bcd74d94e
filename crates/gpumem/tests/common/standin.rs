//! The stand-in CUDA driver's own queries (crates/cuda-standin), read from
//! the loaded driver library by name: a real driver has none of them, so
//! each answers `None` there and the tests that need them skip.

use gpumem::device::cudarc::driver::sys;

fn symbol<T: Copy>(name: &[u8]) -> Option<T> {
    if !gpumem::storage::cuda_available() {
        return None;
    }
    // SAFETY: `culib` opens the driver library (present, checked above);
    // each symbol is read with the type the stand-in exports it with.
    unsafe { sys::culib().get::<T>(name).ok().map(|s| *s) }
}

/// Whether the loaded driver is the stand-in.
pub fn is_standin() -> bool {
    symbol::<extern "C" fn() -> u32>(b"gpumem_standin_version\0").is_some()
}

/// Contract violations the stand-in recorded, on the stand-in.
pub fn violations() -> Option<u64> {
    symbol::<extern "C" fn() -> u64>(b"gpumem_standin_violations\0").map(|f| f())
}

/// Successful calls of driver entry point `name`, on the stand-in.
pub fn calls(name: &str) -> Option<u64> {
    type F = unsafe extern "C" fn(*const std::ffi::c_char) -> u64;
    let f = symbol::<F>(b"gpumem_standin_calls\0")?;
    let name = std::ffi::CString::new(name).expect("no NUL in a name");
    // SAFETY: a NUL-terminated name, as the export reads it.
    Some(unsafe { f(name.as_ptr()) })
}

/// Forget the stand-in's call counts.
pub fn reset_calls() {
    if let Some(f) = symbol::<extern "C" fn()>(b"gpumem_standin_reset_calls\0") {
        f();
    }
}

/// Make the stand-in's device report memory pools or not (for devices
/// opened after the call).
pub fn set_memory_pools(enabled: bool) {
    if let Some(f) = symbol::<extern "C" fn(u32)>(b"gpumem_standin_set_memory_pools\0") {
        f(u32::from(enabled));
    }
}

/// Tell the stand-in that the next violation whose message contains
/// `text` is the test's doing: it is recorded and counted, never aborts.
pub fn expect_violation(text: &str) {
    type F = unsafe extern "C" fn(*const std::ffi::c_char);
    if let Some(f) = symbol::<F>(b"gpumem_standin_expect_violation\0") {
        let text = std::ffi::CString::new(text).expect("no NUL in a message");
        // SAFETY: a NUL-terminated string, as the export reads it.
        unsafe { f(text.as_ptr()) }
    }
}

/// Make the call of driver entry point `name` after `skip` more fail with
/// `code` (a `CUresult`) before it does anything, on the stand-in.
pub fn fail_call(name: &str, skip: u64, code: u32) {
    type F = unsafe extern "C" fn(*const std::ffi::c_char, u64, u32);
    if let Some(f) = symbol::<F>(b"gpumem_standin_fail_call\0") {
        let name = std::ffi::CString::new(name).expect("no NUL in a name");
        // SAFETY: a NUL-terminated name, as the export reads it.
        unsafe { f(name.as_ptr(), skip, code) }
    }
}
