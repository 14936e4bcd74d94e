//! Shared helpers: host-backed managers, a growable pool, byte patterns.
#![allow(dead_code)]

mod grown;
mod streams;
#[allow(unused_imports)]
pub use grown::grown;
pub use streams::TestStreams;

use std::sync::Arc;

use mem_pools::{
    ManagedMemoryHandle, MemoryConfiguration, MemoryDeviceProperties, MemoryManagement,
    MemoryManagementOptions, MemoryPoolOptions, PoolType, ServerLogger,
};
use mem_relocate::StorageCopyQueue;
pub use mem_storage::units::KIB;
use mem_storage::{ComputeStorage, HostStorage};

pub fn props() -> MemoryDeviceProperties {
    MemoryDeviceProperties {
        max_page_size: 256 * KIB,
        alignment: 256,
    }
}

/// One growable sliced pool: 4 KiB pages doubling up to 256 KiB.
pub fn growable() -> MemoryConfiguration {
    MemoryConfiguration::Custom {
        pool_options: vec![MemoryPoolOptions {
            pool_type: PoolType::SlicedPages {
                page_size: 4 * KIB,
                max_slice_size: 256 * KIB,
            },
            dealloc_period: None,
        }],
    }
}

pub fn manager_on<S: ComputeStorage>(storage: S) -> MemoryManagement<S> {
    MemoryManagement::from_configuration(
        storage,
        &props(),
        growable(),
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    )
}

pub fn manager() -> MemoryManagement<HostStorage> {
    manager_on(HostStorage::host())
}

/// A host stream set of `streams` streams copying through the storage.
pub fn host_set(streams: usize) -> TestStreams<HostStorage> {
    let mut set = TestStreams::new(manager(), StorageCopyQueue);
    for _ in 1..streams {
        set.add_stream(manager());
    }
    set
}

pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seed.wrapping_mul(131).wrapping_add(i as u64 * 7) % 251) as u8)
        .collect()
}

/// Reserve `size` bytes and fill them with `pattern(seed, size)`.
pub fn written<S: ComputeStorage>(
    mm: &mut MemoryManagement<S>,
    size: u64,
    seed: u64,
) -> ManagedMemoryHandle {
    let handle = mm.reserve(size).unwrap();
    mm.write(handle.binding(), &pattern(seed, size as usize))
        .unwrap();
    handle
}

/// Whether `handle` still reads `pattern(seed, size)`.
pub fn intact<S: ComputeStorage>(
    mm: &mut MemoryManagement<S>,
    handle: &ManagedMemoryHandle,
    seed: u64,
) -> bool {
    let mut out = vec![0; handle.size() as usize];
    mm.read(handle.binding(), &mut out).unwrap();
    out == pattern(seed, handle.size() as usize)
}

/// The page an allocation lives on and its offset there.
pub fn place<S: ComputeStorage>(
    mm: &mut MemoryManagement<S>,
    handle: &ManagedMemoryHandle,
) -> (mem_storage::StorageId, u64) {
    let view = mm.get_storage(handle.binding()).unwrap();
    (view.id, view.offset())
}
