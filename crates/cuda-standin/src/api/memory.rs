//! `cuMemAlloc` / `cuMemFree`, the stream-ordered pair and the default
//! pool, `cuMemGetInfo`.
//!
//! `cuMemFree` waits for the whole device first, as the driver's does
//! (the cost model charges it a device synchronize). `cuMemFreeAsync`
//! frees in stream order: the memory goes when the stream reaches the
//! free, and work that runs after that and still uses it is a violation.
//! So is work queued after the `cuMemFreeAsync` call on any stream (a
//! synchronous copy included): it is either after the free or unordered
//! against it.
//!
//! Each device has its own default pool (`POOL + device`) and capacity.

use std::ffi::c_void;

use crate::capture::forbid;
use crate::driver::{DRIVER, current_device, entry, lock, ready, violation};
use crate::memory::{AllocKind, MEM};
use crate::types::*;
use crate::work::{Raw, Work};

/// Device 0's default pool's handle; device `d`'s is `POOL + d`.
pub const POOL: u64 = 0xc0_1000;

/// The device whose default pool `pool` is.
pub(crate) fn pool_device(pool: u64) -> Result<usize, CuResult> {
    pool.checked_sub(POOL)
        .and_then(|d| crate::device::valid(i32::try_from(d).ok()?).ok())
        .ok_or(INVALID_HANDLE)
}

fn refuse((code, why): (CuResult, String), what: &str) -> CuResult {
    if code != OUT_OF_MEMORY {
        violation(format!("{what}: {why}"));
    }
    code
}

entry! { fn cuMemAlloc_v2(ptr: *mut DevPtr, bytes: usize) {
    let dev = current_device()?;
    forbid("cuMemAlloc")?;
    if bytes == 0 {
        return Err(INVALID_VALUE);
    }
    let base = lock(&MEM).alloc(bytes as u64, AllocKind::Sync, dev).map_err(|r| refuse(r, "cuMemAlloc"))?;
    // SAFETY: the caller's out-parameter.
    unsafe { put(ptr, base) }
}}

entry! { fn cuMemFree_v2(ptr: DevPtr) {
    let dev = current_device()?;
    forbid("cuMemFree")?;
    for stream in DRIVER.streams_of(dev) {
        stream.drain();
    }
    let mut mem = lock(&MEM);
    mem.free(ptr).map_err(|r| refuse(r, "cuMemFree"))?;
    mem.release_pool_cache();
    Ok(())
}}

entry! { fn cuMemAllocAsync(ptr: *mut DevPtr, bytes: usize, stream: u64) {
    ready()?;
    if !crate::driver::MEMORY_POOLS.load(std::sync::atomic::Ordering::Acquire) {
        return Err(NOT_SUPPORTED);
    }
    if bytes == 0 {
        return Err(INVALID_VALUE);
    }
    let s = DRIVER.stream(stream)?;
    let mut st = lock(&s.state);
    let base = if let Some(capture) = st.capture.as_mut() {
        if capture.is_invalidated() {
            return Err(STREAM_CAPTURE_INVALIDATED);
        }
        // A memory node: the graph's memory, made now so that later nodes
        // can use it.
        let base = lock(&MEM).alloc(bytes as u64, AllocKind::Graph, s.device).map_err(|r| refuse(r, "cuMemAllocAsync (capture)"))?;
        capture.allocs.push(base);
        capture.nodes.push(Raw::Marker(node::MEM_ALLOC));
        base
    } else {
        let first = lock(&MEM).alloc(bytes as u64, AllocKind::Pool, s.device);
        match first {
            Ok(base) => base,
            // Memory whose free is queued on this stream precedes this
            // allocation in stream order, so the driver's pool hands it
            // out again without waiting; the stand-in gives it back by
            // letting the stream run up to here, then asks once more.
            Err((OUT_OF_MEMORY, _)) if lock(&MEM).frees_queued_on(stream) => {
                let upto = st.submitted;
                drop(st);
                s.wait_for(upto);
                lock(&MEM).alloc(bytes as u64, AllocKind::Pool, s.device).map_err(|r| refuse(r, "cuMemAllocAsync"))?
            }
            Err(r) => return Err(refuse(r, "cuMemAllocAsync")),
        }
    };
    // SAFETY: the caller's out-parameter.
    unsafe { put(ptr, base) }
}}

entry! { fn cuMemFreeAsync(ptr: DevPtr, stream: u64) {
    ready()?;
    let s = DRIVER.stream(stream)?;
    let mut st = lock(&s.state);
    if let Some(capture) = st.capture.as_mut() {
        if !capture.allocs.contains(&ptr) {
            // Freeing memory the graph did not allocate is not modelled.
            return Err(NOT_SUPPORTED);
        }
        capture.nodes.push(Raw::Marker(node::MEM_FREE));
        return Ok(());
    }
    let owner = match lock(&MEM).allocs.get_mut(&ptr) {
        Some(a) if a.kind != AllocKind::Graph && a.freeing.is_none() => {
            a.freeing = Some(stream);
            a.owner
        }
        Some(a) if a.freeing.is_some() => {
            violation(format!("cuMemFreeAsync of {ptr:#x}: already freed on a stream"));
            return Err(INVALID_VALUE);
        }
        _ => {
            violation(format!("cuMemFreeAsync of {ptr:#x}: not the base of a live allocation"));
            return Err(INVALID_VALUE);
        }
    };
    let what = format!("cuMemFreeAsync({ptr:#x}) on stream {stream:#x}");
    s.push(&mut st, Work::Free { base: ptr, owner }, what);
    Ok(())
}}

entry! { fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) {
    let dev = current_device()?;
    let (f, t) = lock(&MEM).devices[dev].info();
    // SAFETY: the caller's out-parameters.
    unsafe {
        put(free, f as usize)?;
        put(total, t as usize)
    }
}}

entry! { fn cuDeviceGetDefaultMemPool(pool: *mut u64, dev: i32) {
    ready()?;
    let dev = crate::device::valid(dev)?;
    // SAFETY: the caller's out-parameter (a CUmemoryPool).
    unsafe { put(pool, POOL + dev as u64) }
}}

entry! { fn cuMemPoolGetAttribute(pool: u64, attr: u32, value: *mut c_void) {
    ready()?;
    let dev = pool_device(pool)?;
    let p = lock(&MEM).devices[dev].pool;
    let v = match attr {
        4 => p.threshold,
        5 => p.reserved,
        6 => p.reserved_high,
        7 => p.used,
        8 => p.used_high,
        _ => return Err(NOT_SUPPORTED),
    };
    // SAFETY: these attributes are `cuuint64_t`, which `value` points to.
    unsafe { put(value.cast::<u64>(), v) }
}}

entry! { fn cuMemPoolSetAttribute(pool: u64, attr: u32, value: *mut c_void) {
    ready()?;
    let dev = pool_device(pool)?;
    // SAFETY: these attributes are `cuuint64_t`, which `value` points to.
    let v = unsafe { get(value.cast::<u64>().cast_const()) }?;
    let mut mem = lock(&MEM);
    let p = &mut mem.devices[dev].pool;
    match attr {
        4 => p.threshold = v,
        6 if v == 0 => p.reserved_high = p.reserved,
        8 if v == 0 => p.used_high = p.used,
        _ => return Err(NOT_SUPPORTED),
    }
    Ok(())
}}

entry! { fn cuMemPoolTrimTo(pool: u64, keep: usize) {
    ready()?;
    let dev = pool_device(pool)?;
    let mut mem = lock(&MEM);
    let p = &mut mem.devices[dev].pool;
    p.reserved = p.used.max(p.reserved.min(keep as u64));
    Ok(())
}}
