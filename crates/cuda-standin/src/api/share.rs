//! Sharing chunks between processes (`share.rs`, `memfd.rs`): export as a
//! POSIX file descriptor, import one, and the queries of a sharer.
//!
//! An export of a chunk created without that handle type, and an import
//! of a descriptor that is not an exported stand-in chunk (another file, a
//! closed descriptor), are refused and recorded as violations.

use std::os::fd::{BorrowedFd, IntoRawFd};

use crate::api::vmm::refused;
use crate::driver::{entry, lock, ready};
use crate::memory::MEM;
use crate::types::*;

entry! { fn cuMemExportToShareableHandle(out: *mut std::ffi::c_void, handle: u64, kind: u32, flags: u64) {
    ready()?;
    if flags != 0 {
        return Err(INVALID_VALUE);
    }
    if kind != HANDLE_POSIX_FD {
        // Fabric and Win32 handles are not made by this driver.
        return Err(NOT_SUPPORTED);
    }
    if out.is_null() {
        return Err(INVALID_VALUE);
    }
    let fd = lock(&MEM).export(handle).map_err(refused("cuMemExportToShareableHandle"))?;
    // SAFETY: for a POSIX file descriptor the out-parameter is an `int`.
    unsafe { put(out.cast::<i32>(), fd.into_raw_fd()) }
}}

entry! { fn cuMemImportFromShareableHandle(handle: *mut u64, os_handle: *mut std::ffi::c_void, kind: u32) {
    ready()?;
    if kind != HANDLE_POSIX_FD {
        return Err(NOT_SUPPORTED);
    }
    if handle.is_null() {
        return Err(INVALID_VALUE);
    }
    // A POSIX file descriptor travels as the pointer's value.
    let Some(fd) = i32::try_from(os_handle as usize).ok().filter(|fd| *fd >= 0) else {
        return Err(refused("cuMemImportFromShareableHandle")((
            INVALID_VALUE,
            format!("{os_handle:?} is no file descriptor"),
        )));
    };
    // SAFETY: the call's contract is that `fd` is a descriptor the caller
    // keeps open during the call; one that is closed is answered `EBADF`
    // by the first system call (`fstat`), which is how it is refused.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    let h = lock(&MEM).import(fd).map_err(refused("cuMemImportFromShareableHandle"))?;
    // SAFETY: the caller's out-parameter.
    unsafe { put(handle, h) }
}}

entry! { fn cuMemGetAllocationPropertiesFromHandle(prop: *mut AllocationProp, handle: u64) {
    ready()?;
    let Some((device, types, rdma)) = lock(&MEM).properties(handle) else {
        return Err(refused("cuMemGetAllocationPropertiesFromHandle")((
            INVALID_VALUE,
            format!("{handle:#x} is no live allocation handle"),
        )));
    };
    let p = AllocationProp {
        kind: ALLOCATION_PINNED,
        requested_handle_types: types,
        location: MemLocation { kind: LOCATION_DEVICE, id: device as i32 },
        win32_metadata: std::ptr::null_mut(),
        alloc_flags: [0, u8::from(rdma), 0, 0, 0, 0, 0, 0],
    };
    // SAFETY: the caller's out-parameter.
    unsafe { put(prop, p) }
}}

entry! { fn cuMemRetainAllocationHandle(handle: *mut u64, addr: *mut std::ffi::c_void) {
    ready()?;
    if handle.is_null() {
        return Err(INVALID_VALUE);
    }
    let h = lock(&MEM).retain(addr as u64).map_err(refused("cuMemRetainAllocationHandle"))?;
    // SAFETY: the caller's out-parameter.
    unsafe { put(handle, h) }
}}

entry! { fn cuMemGetAddressRange_v2(base: *mut DevPtr, size: *mut usize, addr: DevPtr) {
    ready()?;
    // An unknown address is an answer (`NOT_FOUND`), not a violation.
    let (b, s) = lock(&MEM).address_range(addr).map_err(|(code, _)| code)?;
    // SAFETY: the caller's out-parameters, each optional.
    unsafe {
        if !base.is_null() {
            put(base, b)?;
        }
        if !size.is_null() {
            put(size, s as usize)?;
        }
    }
    Ok(())
}}
