//! The driver's C types as this library reads and writes them.
//!
//! Enumerations arrive as plain `u32`s (a value the C headers do not list
//! must be refused, not be undefined behaviour), and result codes leave as
//! `u32`, which is how `CUresult` (`#[repr(u32)]` in cudarc) is passed.

use std::ffi::c_void;

/// `CUresult`.
pub type CuResult = u32;
/// `CUdeviceptr`.
pub type DevPtr = u64;
/// What an entry point's body returns: `Err(code)` or success.
pub type Outcome = Result<(), CuResult>;

pub const SUCCESS: CuResult = 0;
pub const INVALID_VALUE: CuResult = 1;
pub const OUT_OF_MEMORY: CuResult = 2;
pub const NOT_INITIALIZED: CuResult = 3;
pub const INVALID_DEVICE: CuResult = 101;
pub const INVALID_IMAGE: CuResult = 200;
pub const PEER_ACCESS_UNSUPPORTED: CuResult = 217;
pub const INVALID_CONTEXT: CuResult = 201;
pub const ALREADY_MAPPED: CuResult = 208;
pub const NOT_MAPPED: CuResult = 211;
pub const INVALID_HANDLE: CuResult = 400;
pub const NOT_FOUND: CuResult = 500;
pub const NOT_READY: CuResult = 600;
pub const ILLEGAL_ADDRESS: CuResult = 700;
pub const PEER_ACCESS_ALREADY_ENABLED: CuResult = 704;
pub const PEER_ACCESS_NOT_ENABLED: CuResult = 705;
pub const NOT_SUPPORTED: CuResult = 801;
pub const STREAM_CAPTURE_UNSUPPORTED: CuResult = 900;
pub const STREAM_CAPTURE_INVALIDATED: CuResult = 901;
pub const STREAM_CAPTURE_WRONG_THREAD: CuResult = 908;

/// Every code this library returns, with its name and description.
pub const ERRORS: &[(CuResult, &str, &str)] = &[
    (SUCCESS, "CUDA_SUCCESS\0", "no error\0"),
    (
        INVALID_VALUE,
        "CUDA_ERROR_INVALID_VALUE\0",
        "invalid argument\0",
    ),
    (
        OUT_OF_MEMORY,
        "CUDA_ERROR_OUT_OF_MEMORY\0",
        "out of memory\0",
    ),
    (
        NOT_INITIALIZED,
        "CUDA_ERROR_NOT_INITIALIZED\0",
        "initialization error\0",
    ),
    (
        INVALID_DEVICE,
        "CUDA_ERROR_INVALID_DEVICE\0",
        "invalid device ordinal\0",
    ),
    (
        INVALID_IMAGE,
        "CUDA_ERROR_INVALID_IMAGE\0",
        "device kernel image is invalid\0",
    ),
    (
        INVALID_CONTEXT,
        "CUDA_ERROR_INVALID_CONTEXT\0",
        "invalid device context\0",
    ),
    (
        PEER_ACCESS_UNSUPPORTED,
        "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED\0",
        "peer access is not supported between these two devices\0",
    ),
    (
        ALREADY_MAPPED,
        "CUDA_ERROR_ALREADY_MAPPED\0",
        "resource already mapped\0",
    ),
    (
        NOT_MAPPED,
        "CUDA_ERROR_NOT_MAPPED\0",
        "resource not mapped\0",
    ),
    (
        INVALID_HANDLE,
        "CUDA_ERROR_INVALID_HANDLE\0",
        "invalid resource handle\0",
    ),
    (
        NOT_FOUND,
        "CUDA_ERROR_NOT_FOUND\0",
        "named symbol not found\0",
    ),
    (NOT_READY, "CUDA_ERROR_NOT_READY\0", "device not ready\0"),
    (
        ILLEGAL_ADDRESS,
        "CUDA_ERROR_ILLEGAL_ADDRESS\0",
        "an illegal memory access was encountered\0",
    ),
    (
        PEER_ACCESS_ALREADY_ENABLED,
        "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED\0",
        "peer access is already enabled\0",
    ),
    (
        PEER_ACCESS_NOT_ENABLED,
        "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED\0",
        "peer access has not been enabled\0",
    ),
    (
        NOT_SUPPORTED,
        "CUDA_ERROR_NOT_SUPPORTED\0",
        "operation not supported (by the gpumem stand-in driver)\0",
    ),
    (
        STREAM_CAPTURE_UNSUPPORTED,
        "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED\0",
        "operation not permitted when stream is capturing\0",
    ),
    (
        STREAM_CAPTURE_INVALIDATED,
        "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED\0",
        "operation failed due to a previous error during capture\0",
    ),
    (
        STREAM_CAPTURE_WRONG_THREAD,
        "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD\0",
        "attempted to end capture on a different thread\0",
    ),
];

/// `CUmemLocation`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MemLocation {
    pub kind: u32,
    pub id: i32,
}

/// `CUmemAllocationProp`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AllocationProp {
    pub kind: u32,
    pub requested_handle_types: u32,
    pub location: MemLocation,
    pub win32_metadata: *mut c_void,
    pub alloc_flags: [u8; 8],
}

/// `CUmemAccessDesc`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct AccessDesc {
    pub location: MemLocation,
    pub flags: u32,
}

pub const LOCATION_DEVICE: u32 = 1;
/// `CUmemAllocationHandleType` bits.
pub const HANDLE_POSIX_FD: u32 = 0x1;
pub const HANDLE_WIN32: u32 = 0x2;
pub const HANDLE_WIN32_KMT: u32 = 0x4;
pub const HANDLE_FABRIC: u32 = 0x8;
pub const ALLOCATION_PINNED: u32 = 1;
pub const ACCESS_NONE: u32 = 0;
pub const ACCESS_READWRITE: u32 = 3;
pub const STREAM_NON_BLOCKING: u32 = 1;
pub const CAPTURE_GLOBAL: u32 = 0;
pub const CAPTURE_RELAXED: u32 = 2;

/// `CUgraphNodeType` values.
pub mod node {
    pub const KERNEL: u32 = 0;
    pub const MEMCPY: u32 = 1;
    pub const MEMSET: u32 = 2;
    pub const HOST: u32 = 3;
    pub const WAIT_EVENT: u32 = 6;
    pub const EVENT_RECORD: u32 = 7;
    pub const MEM_ALLOC: u32 = 10;
    pub const MEM_FREE: u32 = 11;
}

/// Write `value` through an out-parameter.
///
/// # Safety
/// `out` is null or valid for a write of `T`.
pub unsafe fn put<T>(out: *mut T, value: T) -> Outcome {
    if out.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: non-null, and the caller promises it is valid for a write.
    unsafe { out.write(value) };
    Ok(())
}

/// Read an in-parameter.
///
/// # Safety
/// `ptr` is null or valid for a read of `T`.
pub unsafe fn get<T: Copy>(ptr: *const T) -> Result<T, CuResult> {
    if ptr.is_null() {
        return Err(INVALID_VALUE);
    }
    // SAFETY: non-null, and the caller promises it is valid for a read.
    Ok(unsafe { ptr.read() })
}
