//! Calls a test asks the stand-in to fail (`gpumem_standin_fail_call`):
//! the driver's refusal of any entry point, the sharing calls included,
//! with no effect and no violation, so gpumem's handling of it can be
//! tested on the CUDA path.

use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use cudarc::driver::sys::{self, CUmemAllocationHandleType as T, cudaError_enum as E};

use crate::standin::{G, OK, fail_call, shareable, standin};

const FD: T = T::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

fn export(h: u64) -> (sys::CUresult, i32) {
    let mut raw = -1i32;
    // SAFETY: for a POSIX descriptor the out-parameter is an int.
    let r = unsafe { sys::cuMemExportToShareableHandle((&raw mut raw).cast(), h, FD, 0) };
    (r, raw)
}

fn import(fd: &OwnedFd) -> (sys::CUresult, u64) {
    let mut h = 0;
    let os_handle = fd.as_raw_fd() as usize as *mut c_void;
    // SAFETY: a live out-parameter and a descriptor this process holds.
    let r = unsafe { sys::cuMemImportFromShareableHandle(&mut h, os_handle, FD) };
    (r, h)
}

#[test]
fn a_call_asked_to_fail_fails_once_with_no_effect_and_no_violation() {
    let Some(d) = standin() else { return };
    let before = d.violations();
    let mut h = 0;
    // SAFETY: a live out-parameter; granular size.
    let made = unsafe { sys::cuMemCreate(&mut h, G, &shareable(), 0) };
    assert_eq!(made, OK);
    fail_call(
        "cuMemExportToShareableHandle",
        0,
        E::CUDA_ERROR_OUT_OF_MEMORY,
    );
    assert_eq!(
        export(h),
        (E::CUDA_ERROR_OUT_OF_MEMORY, -1),
        "no descriptor"
    );
    let (r, raw) = export(h);
    assert_eq!(r, OK, "only once");
    // SAFETY: the driver handed this new descriptor to the caller.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    fail_call(
        "cuMemImportFromShareableHandle",
        1,
        E::CUDA_ERROR_INVALID_VALUE,
    );
    let (first, a) = import(&fd);
    assert_eq!(first, OK, "one call goes through first");
    assert_eq!(import(&fd), (E::CUDA_ERROR_INVALID_VALUE, 0), "no handle");
    let (third, b) = import(&fd);
    assert_eq!(third, OK);
    // SAFETY: three live handles, none mapped.
    unsafe {
        assert_eq!(sys::cuMemRelease(a), OK);
        assert_eq!(sys::cuMemRelease(b), OK);
        assert_eq!(sys::cuMemRelease(h), OK);
    }
    assert_eq!(d.since(before), Vec::<String>::new());
}
