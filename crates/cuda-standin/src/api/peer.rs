//! Several devices: which pairs can reach each other, peer access for
//! allocations (`cuCtxEnablePeerAccess`) and pool memory
//! (`cuMemPoolSetAccess`), and copies between devices.
//!
//! A peer copy names each end's context; each end must be memory its
//! device may touch (an allocation of it or of a peer it enabled, or a
//! mapping `cuMemSetAccess` opened to it), as any other copy. Mappings
//! are opened per device with `cuMemSetAccess` alone, as on a GPU; peer
//! access is for `cuMemAlloc` and pool memory. Refusals of the peer-access
//! calls (already enabled, not enabled, no link) are the driver's answers
//! to a question, not violations: callers ask them to learn.

use std::ffi::c_int;

use crate::api::copy::{blocking, submit};
use crate::device::{self, can_reach, of_context, pair};
use crate::driver::{DRIVER, current_device, entry, lock, ready};
use crate::memory::MEM;
use crate::types::*;
use crate::work::{Raw, RawPlace};

entry! { fn cuDeviceCanAccessPeer(can: *mut c_int, dev: i32, peer: i32) {
    if !DRIVER.initialized.load(std::sync::atomic::Ordering::Acquire) {
        return Err(NOT_INITIALIZED);
    }
    let (dev, peer) = (device::valid(dev)?, device::valid(peer)?);
    let answer = c_int::from(dev != peer && can_reach(dev, peer));
    // SAFETY: the caller's out-parameter.
    unsafe { put(can, answer) }
}}

/// The device of a context another call names.
fn peer_device(ctx: u64) -> Result<usize, CuResult> {
    of_context(ctx).ok_or(INVALID_CONTEXT)
}

entry! { fn cuCtxEnablePeerAccess(peer_ctx: u64, flags: u32) {
    let dev = current_device()?;
    let peer = peer_device(peer_ctx)?;
    if flags != 0 {
        return Err(INVALID_VALUE);
    }
    if peer == dev {
        return Err(INVALID_DEVICE);
    }
    if !can_reach(dev, peer) {
        return Err(PEER_ACCESS_UNSUPPORTED);
    }
    let mut mem = lock(&MEM);
    if mem.peers & pair(dev, peer) != 0 {
        return Err(PEER_ACCESS_ALREADY_ENABLED);
    }
    mem.peers |= pair(dev, peer);
    Ok(())
}}

entry! { fn cuCtxDisablePeerAccess(peer_ctx: u64) {
    let dev = current_device()?;
    let peer = peer_device(peer_ctx)?;
    let mut mem = lock(&MEM);
    if mem.peers & pair(dev, peer) == 0 {
        return Err(PEER_ACCESS_NOT_ENABLED);
    }
    mem.peers &= !pair(dev, peer);
    Ok(())
}}

/// A copy from `src` as `src_ctx`'s device touches it to `dst` as
/// `dst_ctx`'s device does.
fn peer_copy(
    dst: DevPtr,
    dst_ctx: u64,
    src: DevPtr,
    src_ctx: u64,
    len: usize,
) -> Result<Raw, CuResult> {
    let (dd, sd) = (peer_device(dst_ctx)?, peer_device(src_ctx)?);
    Ok(Raw::Copy {
        dst: RawPlace::On(dst, dd),
        src: RawPlace::On(src, sd),
        len: len as u64,
    })
}

entry! { fn cuMemcpyPeerAsync(dst: DevPtr, dst_ctx: u64, src: DevPtr, src_ctx: u64, len: usize, stream: u64) {
    let raw = peer_copy(dst, dst_ctx, src, src_ctx, len)?;
    let what = format!("peer copy {src:#x} to {dst:#x} ({len} B) on stream {stream:#x}");
    submit(stream, raw, what)
}}

entry! { fn cuMemcpyPeer(dst: DevPtr, dst_ctx: u64, src: DevPtr, src_ctx: u64, len: usize) {
    let raw = peer_copy(dst, dst_ctx, src, src_ctx, len)?;
    blocking(raw, format!("cuMemcpyPeer {src:#x} to {dst:#x} ({len} B)"))
}}

entry! { fn cuMemPoolSetAccess(pool: u64, desc: *const AccessDesc, count: usize) {
    ready()?;
    let owner = crate::api::memory::pool_device(pool)?;
    // Checked for every descriptor before any is applied: a refusal
    // changes nothing. A pool's memory is reached by a peer as an
    // allocation is after cuCtxEnablePeerAccess: the same pair bit (the
    // model does not keep the two apart).
    // SAFETY: the caller's in-parameter: `count` descriptors.
    let grants = unsafe { crate::api::vmm::access_grants(desc, count) }?;
    for &(dev, grant) in &grants {
        if dev == owner && !grant {
            return Err(INVALID_DEVICE); // the owner keeps its access
        }
        if !can_reach(dev, owner) {
            return Err(INVALID_DEVICE);
        }
    }
    let mut mem = lock(&MEM);
    for (dev, grant) in grants.into_iter().filter(|&(dev, _)| dev != owner) {
        match grant {
            true => mem.peers |= pair(dev, owner),
            false => mem.peers &= !pair(dev, owner),
        }
    }
    Ok(())
}}
