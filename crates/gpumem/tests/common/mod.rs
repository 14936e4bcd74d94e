//! Shared helpers: host devices that ignore `GPUMEM_CONF`.
#![allow(dead_code)]

pub mod standin;

use gpumem::prelude::*;

/// A host device with `streams` streams and the default layout.
pub fn host(streams: usize) -> Device {
    Device::host()
        .streams(streams)
        .ignore_env()
        .build()
        .expect("a host device builds")
}

/// One growable sliced pool: 64 KiB pages doubling for slices up to 1 MiB.
pub fn growable() -> PoolLayout {
    PoolLayout::Sliced {
        page_size: 64 * KIB,
        max_slice: MIB,
    }
}

/// A deterministic byte pattern.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seed.wrapping_mul(31).wrapping_add(i as u64 * 7) % 251) as u8)
        .collect()
}

/// Read `len` bytes of a handle.
pub fn read(stream: &Stream, handle: &ManagedMemoryHandle, len: usize) -> Vec<u8> {
    let mut out = vec![0; len];
    stream.read(handle, &mut out).expect("readable");
    out
}
