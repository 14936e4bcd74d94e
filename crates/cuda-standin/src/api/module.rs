//! Modules and launches of the stand-in kernels (`module.rs`), and the
//! stand-in NVRTC entry points that make their PTX.

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_void};
use std::sync::{LazyLock, Mutex};

use crate::driver::{DRIVER, entry, lock, ready};
use crate::module::{KERNELS, compile, entries};
use crate::types::*;
use crate::work::Raw;

/// Loaded modules: handle → entry names; functions: handle → name.
static MODULES: LazyLock<Mutex<HashMap<u64, Vec<String>>>> = LazyLock::new(Mutex::default);
static FUNCTIONS: LazyLock<Mutex<HashMap<u64, String>>> = LazyLock::new(Mutex::default);

entry! { fn cuModuleLoadData(module: *mut u64, image: *const c_void) {
    ready()?;
    if image.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: a PTX image is a NUL-terminated text (the contract).
    let text = unsafe { CStr::from_ptr(image.cast::<c_char>()) }.to_string_lossy();
    let names = entries(&text).ok_or(INVALID_IMAGE)?;
    let handle = DRIVER.handle();
    lock(&MODULES).insert(handle, names);
    // SAFETY: the caller's out-parameter (a CUmodule).
    unsafe { put(module, handle) }
}}

entry! { fn cuModuleGetFunction(function: *mut u64, module: u64, name: *const c_char) {
    ready()?;
    if name.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: a NUL-terminated name (the contract).
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
    let modules = lock(&MODULES);
    let names = modules.get(&module).ok_or(INVALID_HANDLE)?;
    if !names.contains(&name) || !KERNELS.contains(&name.as_str()) {
        return Err(NOT_FOUND);
    }
    let handle = DRIVER.handle();
    lock(&FUNCTIONS).insert(handle, name);
    // SAFETY: the caller's out-parameter (a CUfunction).
    unsafe { put(function, handle) }
}}

entry! { fn cuModuleUnload(module: u64) {
    ready()?;
    lock(&MODULES).remove(&module).map(drop).ok_or(INVALID_HANDLE)
}}

entry! { fn cuLaunchKernel(
    function: u64,
    gx: u32, gy: u32, gz: u32,
    bx: u32, by: u32, bz: u32,
    _shared: u32,
    stream: u64,
    params: *mut *mut c_void,
    _extra: *mut *mut c_void,
) {
    ready()?;
    let name = lock(&FUNCTIONS).get(&function).cloned().ok_or(INVALID_HANDLE)?;
    if params.is_null() || name != "axpb" {
        return Err(INVALID_VALUE);
    }
    let threads = [gx, gy, gz, bx, by, bz].iter().map(|&d| u64::from(d)).product::<u64>();
    // SAFETY: `params` holds one pointer per kernel argument, each to a
    // value of the argument's type (the contract); axpb's are
    // (u64, u64, f32, f32, i32).
    let (x, y, a, b, n) = unsafe {
        (
            *(*params).cast::<u64>(),
            *(*params.add(1)).cast::<u64>(),
            *(*params.add(2)).cast::<f32>(),
            *(*params.add(3)).cast::<f32>(),
            *(*params.add(4)).cast::<i32>(),
        )
    };
    let n = u64::try_from(n).unwrap_or(0).min(threads);
    let raw = Raw::Axpb { x, y, a, b, n };
    let what = format!("kernel axpb over {n} floats on stream {stream:#x}");
    DRIVER.stream(stream)?.submit(raw, what)
}}

/// NVRTC's programs: handle → (source, PTX or log).
static PROGRAMS: LazyLock<Mutex<HashMap<u64, Program>>> = LazyLock::new(Mutex::default);

/// A program's source, and its PTX or its compile log.
type Program = (String, Result<String, String>);

const NVRTC_SUCCESS: u32 = 0;
const NVRTC_INVALID_INPUT: u32 = 3;
const NVRTC_INVALID_PROGRAM: u32 = 4;
const NVRTC_COMPILATION: u32 = 6;

/// NVRTC's version: 12.8.
///
/// # Safety
/// Both pointers are null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvrtcVersion(major: *mut i32, minor: *mut i32) -> u32 {
    // SAFETY: the caller's out-parameters.
    match unsafe { put(major, 12).and_then(|()| put(minor, 8)) } {
        Ok(()) => NVRTC_SUCCESS,
        Err(_) => NVRTC_INVALID_INPUT,
    }
}

/// A program from `source` (headers are not supported).
///
/// # Safety
/// `prog` is valid for a write; `source` a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvrtcCreateProgram(
    prog: *mut u64,
    source: *const c_char,
    _name: *const c_char,
    headers: i32,
    _sources: *const *const c_char,
    _names: *const *const c_char,
) -> u32 {
    if source.is_null() || headers != 0 {
        return NVRTC_INVALID_INPUT;
    }
    // SAFETY: NUL-terminated (the contract).
    let src = unsafe { CStr::from_ptr(source) }
        .to_string_lossy()
        .into_owned();
    let handle = DRIVER.handle();
    lock(&PROGRAMS).insert(handle, (src, Err(String::new())));
    // SAFETY: the caller's out-parameter.
    match unsafe { put(prog, handle) } {
        Ok(()) => NVRTC_SUCCESS,
        Err(_) => NVRTC_INVALID_INPUT,
    }
}

/// "Compile": list the program's kernels, refusing one with no host
/// implementation (options are ignored).
#[unsafe(no_mangle)]
pub extern "C" fn nvrtcCompileProgram(
    prog: u64,
    _count: i32,
    _options: *const *const c_char,
) -> u32 {
    let mut programs = lock(&PROGRAMS);
    let Some((src, out)) = programs.get_mut(&prog) else {
        return NVRTC_INVALID_PROGRAM;
    };
    *out = compile(src).map_err(|missing| {
        format!("gpumem stand-in NVRTC: no host implementation of kernel(s) {missing:?}\0")
    });
    if out.is_ok() {
        NVRTC_SUCCESS
    } else {
        NVRTC_COMPILATION
    }
}

fn text(prog: u64, log: bool) -> Option<String> {
    let programs = lock(&PROGRAMS);
    let (_, out) = programs.get(&prog)?;
    Some(match (out, log) {
        (Ok(ptx), false) => format!("{ptx}\0"),
        (Ok(_), true) => "\0".to_string(),
        (Err(e), true) => {
            if e.is_empty() {
                "\0".to_string()
            } else {
                e.clone()
            }
        }
        (Err(_), false) => return None,
    })
}

macro_rules! nvrtc_text {
    ($size:ident, $get:ident, $log:expr) => {
        /// The program's output's size, with its NUL.
        ///
        /// # Safety
        /// `size` is valid for a write.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $size(prog: u64, size: *mut usize) -> u32 {
            let Some(t) = text(prog, $log) else {
                return NVRTC_INVALID_PROGRAM;
            };
            // SAFETY: the caller's out-parameter.
            if unsafe { put(size, t.len()) }.is_ok() {
                NVRTC_SUCCESS
            } else {
                NVRTC_INVALID_INPUT
            }
        }

        /// The program's output, with its NUL.
        ///
        /// # Safety
        /// `out` has room for the size the size call gave.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $get(prog: u64, out: *mut c_char) -> u32 {
            let Some(t) = text(prog, $log) else {
                return NVRTC_INVALID_PROGRAM;
            };
            if out.is_null() {
                return NVRTC_INVALID_INPUT;
            }
            // SAFETY: `out` has room for `t.len()` bytes (the contract).
            unsafe { std::ptr::copy_nonoverlapping(t.as_ptr().cast(), out, t.len()) };
            NVRTC_SUCCESS
        }
    };
}
nvrtc_text!(nvrtcGetPTXSize, nvrtcGetPTX, false);
nvrtc_text!(nvrtcGetProgramLogSize, nvrtcGetProgramLog, true);

/// Forget a program.
///
/// # Safety
/// `prog` is valid for a read and a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvrtcDestroyProgram(prog: *mut u64) -> u32 {
    // SAFETY: the caller's in/out parameter.
    let Ok(handle) = (unsafe { get(prog.cast_const()) }) else {
        return NVRTC_INVALID_INPUT;
    };
    match lock(&PROGRAMS).remove(&handle) {
        // SAFETY: as above.
        Some(_) => unsafe { put(prog, 0).map_or(NVRTC_INVALID_INPUT, |()| NVRTC_SUCCESS) },
        None => NVRTC_INVALID_PROGRAM,
    }
}
