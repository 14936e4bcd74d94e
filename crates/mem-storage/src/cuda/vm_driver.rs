//! The driver calls of [`crate::cuda::CudaVirtualMemory`], one function each.
//!
//! cudarc 0.19 has no safe wrappers for virtual memory management, so these
//! call its `sys` bindings directly. Each function takes plain values,
//! builds the driver's structs itself and returns a typed error; the
//! callers have bound the context and checked every id, offset and size
//! against the table first, which is what each `SAFETY` argument leans on.

use std::ptr;

use cudarc::driver::sys::{self, CUdevice, CUdeviceptr, CUmemGenericAllocationHandle};
use cudarc::driver::{DriverError, sys::CUresult};

use crate::cuda::driver;
use crate::error::StorageError;

/// Pinned device memory on `device`, no exportable handle.
fn allocation_prop(device: CUdevice) -> sys::CUmemAllocationProp {
    sys::CUmemAllocationProp {
        type_: sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED,
        requestedHandleTypes: sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE,
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: device,
        },
        win32HandleMetaData: ptr::null_mut(),
        allocFlags: sys::CUmemAllocationProp_st__bindgen_ty_1 {
            compressionType: 0,
            gpuDirectRDMACapable: 0,
            usage: 0,
            reserved: [0; 4],
        },
    }
}

/// The smallest size and alignment the driver maps on `device`.
pub(crate) fn minimum_granularity(device: CUdevice) -> Result<u64, StorageError> {
    let prop = allocation_prop(device);
    let mut granularity = 0usize;
    let minimum = sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM;
    // SAFETY: both pointers are to live locals of the right types.
    unsafe { sys::cuMemGetAllocationGranularity(&mut granularity, &prop, minimum) }
        .result()
        .map_err(driver("reading the allocation granularity"))?;
    Ok(granularity as u64)
}

/// The driver's recommended size and alignment of a chunk with the handle
/// types `types` on `device`, if it says.
pub(crate) fn recommended_granularity(device: CUdevice, types: u32) -> Option<u64> {
    let mut prop = allocation_prop(device);
    prop.requestedHandleTypes = sys::CUmemAllocationHandleType(types);
    let mut granularity = 0usize;
    let recommended = sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED;
    // SAFETY: both pointers are to live locals of the right types.
    unsafe { sys::cuMemGetAllocationGranularity(&mut granularity, &prop, recommended) }
        .result()
        .ok()
        .map(|()| granularity as u64)
}

/// Reserve `len` bytes of device addresses aligned to `align`.
pub(crate) fn reserve(len: usize, align: usize) -> Result<CUdeviceptr, DriverError> {
    let mut base: CUdeviceptr = 0;
    // SAFETY: `base` is a live out-parameter; no fixed address is asked for.
    unsafe { sys::cuMemAddressReserve(&mut base, len, align, 0, 0) }.result()?;
    Ok(base)
}

/// Give back a whole reservation.
///
/// # Safety
/// `base..base+len` must be a whole reservation from [`reserve`], with
/// nothing mapped in it, not freed before.
pub(crate) unsafe fn free(base: CUdeviceptr, len: usize) -> Result<(), DriverError> {
    // SAFETY: the caller guarantees a whole, empty, live reservation.
    unsafe { sys::cuMemAddressFree(base, len) }.result()
}

/// Create `len` bytes of pinned memory on `device`.
pub(crate) fn create(
    device: CUdevice,
    len: usize,
) -> Result<CUmemGenericAllocationHandle, DriverError> {
    let prop = allocation_prop(device);
    let mut handle: CUmemGenericAllocationHandle = 0;
    // SAFETY: `handle` and `prop` are live locals of the right types.
    unsafe { sys::cuMemCreate(&mut handle, len, &prop, 0) }.result()?;
    Ok(handle)
}

/// Create `len` bytes of pinned memory on `device` with the handle types
/// `types` (a bit set of `CUmemAllocationHandleType`) and, if `rdma`, the
/// GPUDirect RDMA flag.
pub(crate) fn create_shareable(
    device: CUdevice,
    len: usize,
    types: u32,
    rdma: bool,
) -> Result<CUmemGenericAllocationHandle, DriverError> {
    let mut prop = allocation_prop(device);
    // The driver reads the field as a bit set of handle types.
    prop.requestedHandleTypes = sys::CUmemAllocationHandleType(types);
    prop.allocFlags.gpuDirectRDMACapable = u8::from(rdma);
    let mut handle: CUmemGenericAllocationHandle = 0;
    // SAFETY: `handle` and `prop` are live locals of the right types.
    unsafe { sys::cuMemCreate(&mut handle, len, &prop, 0) }.result()?;
    Ok(handle)
}

/// Release a chunk's memory.
///
/// # Safety
/// `handle` must come from [`create`], be unmapped and not released before.
pub(crate) unsafe fn release(handle: CUmemGenericAllocationHandle) -> Result<(), DriverError> {
    // SAFETY: the caller guarantees a live, unmapped handle.
    unsafe { sys::cuMemRelease(handle) }.result()
}

/// The access `devices` get: read-write when `grant`, none otherwise.
fn access_descs(devices: &[CUdevice], grant: bool) -> Vec<sys::CUmemAccessDesc> {
    let flags = match grant {
        true => sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        false => sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE,
    };
    devices
        .iter()
        .map(|&id| sys::CUmemAccessDesc {
            location: sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id,
            },
            flags,
        })
        .collect()
}

/// Map the whole of `handle` (`len` bytes) at `at` and make it readable and
/// writable from every device of `access` (the owner first, then its
/// peers; one `cuMemSetAccess` for all). On an access failure the mapping
/// is undone.
///
/// # Safety
/// `at..at+len` must lie inside a live reservation with nothing mapped
/// there, and `handle` be a live, unmapped chunk of exactly `len` bytes.
pub(crate) unsafe fn map(
    at: CUdeviceptr,
    len: usize,
    handle: CUmemGenericAllocationHandle,
    access: &[CUdevice],
) -> Result<(), DriverError> {
    // SAFETY: the caller guarantees an empty reserved span and a whole,
    // unmapped chunk of the same size.
    unsafe { sys::cuMemMap(at, len, 0, handle, 0) }.result()?;
    // SAFETY: `at..+len` was just mapped; nothing used it yet.
    if let Err(err) = unsafe { set_access(at, len, access, true) } {
        // SAFETY: the span was mapped just above and nothing used it yet.
        let _ = unsafe { unmap(at, len) };
        return Err(err);
    }
    Ok(())
}

/// Give `devices` read-write access to one mapping (`grant`), or take it
/// away; the access of devices not named stays as it was.
///
/// # Safety
/// `at..at+len` must be one whole live mapping; taking access away from a
/// device whose queued work still uses it is a device fault, so the caller
/// proves there is none.
pub(crate) unsafe fn set_access(
    at: CUdeviceptr,
    len: usize,
    devices: &[CUdevice],
    grant: bool,
) -> Result<(), DriverError> {
    let descs = access_descs(devices, grant);
    // SAFETY: a whole live mapping (the caller); `descs` holds exactly
    // `descs.len()` live descriptors.
    let set: CUresult = unsafe { sys::cuMemSetAccess(at, len, descs.as_ptr(), descs.len()) };
    set.result()
}

/// Whether `device` can reach memory that lives on `owner`.
pub(crate) fn can_access_peer(device: CUdevice, owner: CUdevice) -> Result<bool, DriverError> {
    let mut can = 0;
    // SAFETY: `can` is a live out-parameter; the ids come from contexts.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, device, owner) }.result()?;
    Ok(can != 0)
}

/// Unmap one whole mapping.
///
/// # Safety
/// `at..at+len` must be exactly one live mapping that no queued or running
/// device work still uses.
pub(crate) unsafe fn unmap(at: CUdeviceptr, len: usize) -> Result<(), DriverError> {
    // SAFETY: the caller guarantees one whole, idle mapping.
    unsafe { sys::cuMemUnmap(at, len) }.result()
}
