//! `cuMemAlloc` / `cuMemFree`, the stream-ordered pair and the default
//! pool, `cuMemGetInfo`.
//!
//! `cuMemFree` waits for the whole device first, as the driver's does
//! (the cost model charges it a device synchronize). `cuMemFreeAsync`
//! frees in stream order: the memory goes when the stream reaches the
//! free, and work that runs after that and still uses it is a violation.

use std::ffi::c_void;

use crate::capture::forbid;
use crate::driver::{DRIVER, entry, lock, ready, violation};
use crate::memory::{AllocKind, MEM};
use crate::types::*;
use crate::work::{Raw, Work};

/// The default pool's handle.
pub const POOL: u64 = 0xc0_1000;

fn refuse((code, why): (CuResult, String), what: &str) -> CuResult {
    if code != OUT_OF_MEMORY {
        violation(format!("{what}: {why}"));
    }
    code
}

entry! { fn cuMemAlloc_v2(ptr: *mut DevPtr, bytes: usize) {
    ready()?;
    forbid("cuMemAlloc")?;
    if bytes == 0 {
        return Err(INVALID_VALUE);
    }
    let base = lock(&MEM).alloc(bytes as u64, AllocKind::Sync).map_err(|r| refuse(r, "cuMemAlloc"))?;
    // SAFETY: the caller's out-parameter.
    unsafe { put(ptr, base) }
}}

entry! { fn cuMemFree_v2(ptr: DevPtr) {
    ready()?;
    forbid("cuMemFree")?;
    for stream in DRIVER.all_streams() {
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
        let base = lock(&MEM).alloc(bytes as u64, AllocKind::Graph).map_err(|r| refuse(r, "cuMemAllocAsync (capture)"))?;
        capture.allocs.push(base);
        capture.nodes.push(Raw::Marker(node::MEM_ALLOC));
        base
    } else {
        lock(&MEM).alloc(bytes as u64, AllocKind::Pool).map_err(|r| refuse(r, "cuMemAllocAsync"))?
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
    let owner = match lock(&MEM).allocation(ptr) {
        Some(a) if a.kind != AllocKind::Graph => a.owner,
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
    ready()?;
    let (f, t) = lock(&MEM).info();
    // SAFETY: the caller's out-parameters.
    unsafe {
        put(free, f as usize)?;
        put(total, t as usize)
    }
}}

entry! { fn cuDeviceGetDefaultMemPool(pool: *mut u64, dev: i32) {
    ready()?;
    if dev != 0 {
        return Err(INVALID_DEVICE);
    }
    // SAFETY: the caller's out-parameter (a CUmemoryPool).
    unsafe { put(pool, POOL) }
}}

entry! { fn cuMemPoolGetAttribute(pool: u64, attr: u32, value: *mut c_void) {
    ready()?;
    if pool != POOL {
        return Err(INVALID_HANDLE);
    }
    let p = lock(&MEM).pool;
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
    if pool != POOL {
        return Err(INVALID_HANDLE);
    }
    // SAFETY: these attributes are `cuuint64_t`, which `value` points to.
    let v = unsafe { get(value.cast::<u64>().cast_const()) }?;
    let mut mem = lock(&MEM);
    match attr {
        4 => mem.pool.threshold = v,
        6 if v == 0 => mem.pool.reserved_high = mem.pool.reserved,
        8 if v == 0 => mem.pool.used_high = mem.pool.used,
        _ => return Err(NOT_SUPPORTED),
    }
    Ok(())
}}

entry! { fn cuMemPoolTrimTo(pool: u64, keep: usize) {
    ready()?;
    if pool != POOL {
        return Err(INVALID_HANDLE);
    }
    let mut mem = lock(&MEM);
    let p = &mut mem.pool;
    p.reserved = p.used.max(p.reserved.min(keep as u64));
    Ok(())
}}
