//! The devices: how many (`GPUMEM_STANDIN_DEVICES`, 1 by default), their
//! primary contexts, and which pairs can reach each other's memory.
//!
//! Every device shares one address space (unified addressing, as on every
//! GPU the workspace supports) and has a capacity of its own. Peer access
//! is one bit per (accessing device, owning device) pair: `cuMemAlloc` and
//! pool memory of device `b` is reachable from device `a` when `a`'s
//! context enabled peer access to `b`'s (`cuCtxEnablePeerAccess`);
//! mappings are reachable from the devices `cuMemSetAccess` named.

use std::sync::LazyLock;

use crate::types::{CuResult, INVALID_DEVICE};

/// The most devices the stand-in makes (the peer bits fit one `u64`).
pub const MAX_DEVICES: usize = 8;

/// Device 0's primary context; device `d`'s is `CONTEXT + (d << 8)`.
const CONTEXT: u64 = 0xc0_0000;

/// How many devices there are (`GPUMEM_STANDIN_DEVICES`, 1 to 8).
pub fn count() -> i32 {
    static COUNT: LazyLock<i32> = LazyLock::new(|| {
        std::env::var("GPUMEM_STANDIN_DEVICES")
            .ok()
            .and_then(|v| v.parse::<i32>().ok())
            .map_or(1, |n| n.clamp(1, MAX_DEVICES as i32))
    });
    *COUNT
}

/// Whether distinct devices can reach each other at all
/// (`GPUMEM_STANDIN_PEER_ACCESS=0`: a machine whose GPUs share no link,
/// where `cuDeviceCanAccessPeer` answers 0).
pub fn peers_linked() -> bool {
    static LINKED: LazyLock<bool> =
        LazyLock::new(|| !std::env::var("GPUMEM_STANDIN_PEER_ACCESS").is_ok_and(|v| v == "0"));
    *LINKED
}

/// `dev` when it names a device, else `INVALID_DEVICE`.
pub fn valid(dev: i32) -> Result<usize, CuResult> {
    if (0..count()).contains(&dev) {
        Ok(dev as usize)
    } else {
        Err(INVALID_DEVICE)
    }
}

/// Device `dev`'s primary context handle.
pub fn context(dev: usize) -> u64 {
    CONTEXT + ((dev as u64) << 8)
}

/// The device whose primary context `ctx` is.
pub fn of_context(ctx: u64) -> Option<usize> {
    let dev = ctx.checked_sub(CONTEXT)? >> 8;
    (context(dev as usize) == ctx && dev < count() as u64).then_some(dev as usize)
}

/// Whether device `from` can be given access to device `to`'s memory.
pub fn can_reach(from: usize, to: usize) -> bool {
    from == to || peers_linked()
}

/// The bit of the (accessing `from`, owning `to`) pair.
pub fn pair(from: usize, to: usize) -> u64 {
    1 << (from * MAX_DEVICES + to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_names_its_device_and_nothing_else_is_a_context() {
        assert_eq!(of_context(context(0)), Some(0));
        assert_eq!(of_context(context(0) + 1), None);
        assert_eq!(of_context(0), None);
        assert_ne!(pair(0, 1), pair(1, 0));
    }
}
