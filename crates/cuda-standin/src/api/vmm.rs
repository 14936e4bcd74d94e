//! Virtual memory management: reserve, create, map, set access, unmap,
//! release, granularity. The rules are in `vmm.rs`; a call that breaks
//! one is refused with the driver's code and recorded as a violation
//! (gpumem checks every one of them in its own table first).

use crate::capture::forbid;
use crate::driver::{entry, lock, ready, violation};
use crate::memory::MEM;
use crate::memory::{GRANULARITY, Refusal};
use crate::types::*;

pub(crate) fn refused(what: &str) -> impl FnOnce(Refusal) -> CuResult + '_ {
    move |(code, why)| {
        if code != OUT_OF_MEMORY {
            violation(format!("{what}: {why}"));
        }
        code
    }
}

/// What a chunk is made as: device, handle types, RDMA capable.
struct Made {
    device: usize,
    types: u32,
    rdma: bool,
}

/// A `CUmemAllocationProp` a device can make: pinned, on a device, with
/// no handle type or a POSIX file descriptor. Fabric handles are refused
/// with `NOT_SUPPORTED`, as by a driver on a machine without an NVLink
/// fabric, so callers take their fallback (ask again without it).
///
/// # Safety
/// `prop` is null or points to a `CUmemAllocationProp`.
unsafe fn check_prop(prop: *const AllocationProp) -> Result<Made, CuResult> {
    // SAFETY: the caller's promise.
    let p = unsafe { get(prop) }?;
    if p.kind != ALLOCATION_PINNED || p.location.kind != LOCATION_DEVICE {
        return Err(INVALID_VALUE);
    }
    let device = crate::device::valid(p.location.id)?;
    let types = p.requested_handle_types;
    if types & (HANDLE_FABRIC | HANDLE_WIN32 | HANDLE_WIN32_KMT) != 0 {
        return Err(NOT_SUPPORTED);
    }
    if types & !HANDLE_POSIX_FD != 0 {
        return Err(INVALID_VALUE);
    }
    // `allocFlags.gpuDirectRDMACapable`.
    let rdma = p.alloc_flags[1] != 0;
    Ok(Made {
        device,
        types,
        rdma,
    })
}

entry! { fn cuMemGetAllocationGranularity(granularity: *mut usize, prop: *const AllocationProp, option: u32) {
    ready()?;
    // SAFETY: the caller's in-parameter.
    unsafe { check_prop(prop) }?;
    if option > 1 {
        return Err(INVALID_VALUE);
    }
    // SAFETY: the caller's out-parameter.
    unsafe { put(granularity, GRANULARITY as usize) }
}}

entry! { fn cuMemAddressReserve(ptr: *mut DevPtr, size: usize, alignment: usize, _addr: DevPtr, flags: u64) {
    ready()?;
    forbid("cuMemAddressReserve")?;
    if flags != 0 {
        return Err(INVALID_VALUE);
    }
    let base = lock(&MEM).reserve(size as u64, alignment as u64).map_err(refused("cuMemAddressReserve"))?;
    // SAFETY: the caller's out-parameter.
    unsafe { put(ptr, base) }
}}

entry! { fn cuMemAddressFree(ptr: DevPtr, size: usize) {
    ready()?;
    forbid("cuMemAddressFree")?;
    lock(&MEM).address_free(ptr, size as u64).map_err(refused("cuMemAddressFree"))
}}

entry! { fn cuMemCreate(handle: *mut u64, size: usize, prop: *const AllocationProp, flags: u64) {
    ready()?;
    forbid("cuMemCreate")?;
    // SAFETY: the caller's in-parameter.
    let made = unsafe { check_prop(prop) }?;
    if flags != 0 {
        return Err(INVALID_VALUE);
    }
    let h = lock(&MEM)
        .create(size as u64, made.device, made.types, made.rdma)
        .map_err(refused("cuMemCreate"))?;
    // SAFETY: the caller's out-parameter.
    unsafe { put(handle, h) }
}}

entry! { fn cuMemRelease(handle: u64) {
    ready()?;
    forbid("cuMemRelease")?;
    lock(&MEM).release(handle).map_err(refused("cuMemRelease"))
}}

entry! { fn cuMemMap(ptr: DevPtr, size: usize, offset: usize, handle: u64, flags: u64) {
    ready()?;
    forbid("cuMemMap")?;
    if flags != 0 {
        return Err(INVALID_VALUE);
    }
    lock(&MEM).map(ptr, size as u64, offset as u64, handle).map_err(refused("cuMemMap"))
}}

entry! { fn cuMemUnmap(ptr: DevPtr, size: usize) {
    ready()?;
    forbid("cuMemUnmap")?;
    lock(&MEM).unmap(ptr, size as u64).map_err(refused("cuMemUnmap"))
}}

entry! { fn cuMemSetAccess(ptr: DevPtr, size: usize, desc: *const AccessDesc, count: usize) {
    ready()?;
    forbid("cuMemSetAccess")?;
    // One descriptor per device; each sets that device's access and leaves
    // the others' as they were (a revoke names the device with NONE).
    // SAFETY: the caller's in-parameter: `count` descriptors.
    let grants = unsafe { access_grants(desc, count) }?;
    let mut mem = lock(&MEM);
    // Checked for every device before any is set: a refusal changes nothing.
    for &(dev, _) in &grants {
        mem.check_access(ptr, size as u64, dev).map_err(refused("cuMemSetAccess"))?;
    }
    for (dev, grant) in grants {
        mem.set_access(ptr, size as u64, dev, grant).map_err(refused("cuMemSetAccess"))?;
    }
    Ok(())
}}

entry! { fn cuMemGetAccess(flags: *mut u64, location: *const MemLocation, ptr: DevPtr) {
    ready()?;
    // SAFETY: the caller's in-parameter.
    let loc = unsafe { get(location) }?;
    if loc.kind != LOCATION_DEVICE {
        return Err(INVALID_VALUE);
    }
    let dev = crate::device::valid(loc.id)?;
    let granted = lock(&MEM).access_of(ptr, dev).map_err(refused("cuMemGetAccess"))?;
    let value = u64::from(if granted { ACCESS_READWRITE } else { ACCESS_NONE });
    // SAFETY: the caller's out-parameter (a `unsigned long long`).
    unsafe { put(flags, value) }
}}

/// The (device, grant) pairs of `count` access descriptors: read-write
/// grants, none revokes; anything else is refused before any is applied.
///
/// # Safety
/// `desc` points to `count` readable descriptors (or is null, refused).
pub(crate) unsafe fn access_grants(
    desc: *const AccessDesc,
    count: usize,
) -> Result<Vec<(usize, bool)>, CuResult> {
    if count == 0 || count > crate::device::MAX_DEVICES {
        return Err(if count == 0 {
            INVALID_VALUE
        } else {
            INVALID_DEVICE
        });
    }
    let mut grants = Vec::with_capacity(count);
    for i in 0..count {
        // SAFETY: within the `count` descriptors the caller vouches for.
        let d = unsafe { get(desc.add(i)) }?;
        if d.location.kind != LOCATION_DEVICE {
            return Err(INVALID_VALUE);
        }
        let dev = crate::device::valid(d.location.id)?;
        let grant = match d.flags {
            ACCESS_READWRITE => true,
            ACCESS_NONE => false,
            // Read-only access is not modelled: refused, not widened.
            _ => return Err(NOT_SUPPORTED),
        };
        grants.push((dev, grant));
    }
    Ok(grants)
}
