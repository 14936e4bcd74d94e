//! Shared helpers for the integration tests: host-backed managers.
#![allow(missing_docs)]
#![allow(dead_code)]

use std::sync::Arc;

use mem_pools::{
    ManagedMemoryHandle, MemoryConfiguration, MemoryDeviceProperties, MemoryManagement,
    MemoryManagementOptions, MemoryPoolOptions, PoolType, ServerLogger,
};
use mem_storage::{ComputeStorage, HostResource, HostStorage, HostVirtualMemory, ResourceStorage};

pub use mem_storage::units::{KIB, MIB};

pub fn props() -> MemoryDeviceProperties {
    MemoryDeviceProperties {
        max_page_size: 64 * MIB,
        alignment: 256,
    }
}

pub fn manager(config: MemoryConfiguration) -> MemoryManagement<HostStorage> {
    MemoryManagement::from_configuration(
        HostStorage::host(),
        &props(),
        config,
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    )
}

pub fn lazy_manager(config: MemoryConfiguration) -> MemoryManagement<HostStorage> {
    MemoryManagement::from_configuration(
        HostStorage::host(),
        &props(),
        config,
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions {
            lazy_pages: true,
            ..Default::default()
        },
    )
}

/// One growable sliced pool (page 64 KiB, slices up to 1 MiB) then exclusive pages.
pub fn growable() -> MemoryConfiguration {
    MemoryConfiguration::Custom {
        pool_options: vec![
            MemoryPoolOptions {
                pool_type: PoolType::SlicedPages {
                    page_size: 64 * KIB,
                    max_slice_size: MIB,
                },
                dealloc_period: None,
            },
            MemoryPoolOptions {
                pool_type: PoolType::ExclusivePages {
                    max_alloc_size: 16 * MIB,
                },
                dealloc_period: None,
            },
        ],
    }
}

/// A single fixed sliced pool (1 MiB pages, slices up to 256 KiB).
pub fn sliced() -> MemoryConfiguration {
    MemoryConfiguration::Custom {
        pool_options: vec![MemoryPoolOptions {
            pool_type: PoolType::SlicedPages {
                page_size: MIB,
                max_slice_size: 256 * KIB,
            },
            dealloc_period: None,
        }],
    }
}

pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (seed.wrapping_mul(31).wrapping_add(i as u64 * 7) % 251) as u8)
        .collect()
}

/// Reserve `size` bytes and fill them with `pattern(seed, size)`.
pub fn written<S: ComputeStorage>(
    mm: &mut MemoryManagement<S>,
    size: u64,
    seed: u64,
) -> ManagedMemoryHandle {
    let h = mm.reserve(size).unwrap();
    mm.write(h.binding(), &pattern(seed, size as usize))
        .unwrap();
    h
}

/// Whether `h` still holds `pattern(seed, size)`.
pub fn intact<S: ComputeStorage>(
    mm: &mut MemoryManagement<S>,
    h: &ManagedMemoryHandle,
    seed: u64,
) -> bool {
    let mut out = vec![0; h.size() as usize];
    mm.read(h.binding(), &mut out).unwrap();
    out == pattern(seed, h.size() as usize)
}

/// A manager over host memory whose one pool is an arena with 64 KiB
/// chunks (a 64 MiB address space): slices up to `max_slice`, a range of
/// `range` bytes, idle chunks shed past 1/`idle_share` of the mapped ones
/// (`None`: the default), nothing released by the pool's threshold. The
/// virtual memory comes back too, for its `VirtualMemoryStats`.
pub fn host_arena(
    max_slice: u64,
    range: u64,
    idle_share: Option<u64>,
) -> (
    Arc<HostVirtualMemory>,
    MemoryManagement<ResourceStorage<HostResource>>,
) {
    let vm = Arc::new(HostVirtualMemory::with_granularity(64 * MIB, 64 * KIB).unwrap());
    let storage = ResourceStorage::new(HostResource::new()).with_virtual_memory(vm.clone());
    let options = MemoryManagementOptions {
        arena_idle_share: idle_share,
        ..MemoryManagementOptions::default()
    };
    let mm = arena_over(storage, max_slice, range, options);
    (vm, mm)
}

/// One virtual-memory arena pool of slices up to `max_slice` bytes in
/// ranges of `range` bytes over `storage`, nothing released by the pool's
/// threshold.
pub fn arena_over(
    storage: ResourceStorage<HostResource>,
    max_slice: u64,
    range: u64,
    options: MemoryManagementOptions,
) -> MemoryManagement<ResourceStorage<HostResource>> {
    let pool = MemoryPoolOptions {
        pool_type: PoolType::VirtualArena {
            max_slice_size: max_slice,
            range_size: range,
            release_threshold: u64::MAX,
        },
        dealloc_period: None,
    };
    MemoryManagement::from_configuration(
        storage,
        &props(),
        MemoryConfiguration::Custom {
            pool_options: vec![pool],
        },
        Arc::new(ServerLogger::default()),
        options,
    )
}

/// A virtual memory of 64 MiB in 64 KiB granules whose calls can be
/// failed (`FaultInjection`), and one arena over it as [`arena_over`]
/// builds it.
pub fn faulty_host_arena(
    max_slice: u64,
    range: u64,
    options: MemoryManagementOptions,
) -> (
    Arc<mem_storage::FaultInjection<HostVirtualMemory>>,
    MemoryManagement<ResourceStorage<HostResource>>,
) {
    let vm = Arc::new(mem_storage::FaultInjection::new(
        HostVirtualMemory::with_granularity(64 * MIB, 64 * KIB).unwrap(),
    ));
    let storage = ResourceStorage::new(HostResource::new())
        .with_virtual_memory(vm.clone() as Arc<dyn mem_storage::VirtualMemory>);
    (vm, arena_over(storage, max_slice, range, options))
}

/// Reserve `bytes` on `mm` with driver call `n` (counted from now) failed
/// by `plan`: alone (`FaultPlan::Nth`) or with every call after it
/// (`FaultPlan::FromNth`). A refusal must leave no slice more and, when
/// only one call failed, no more physical memory (what was created goes
/// back; with every later call failing, its release waits for the next
/// flush); once the fault has passed, the same reservation fits. `case`
/// names the run in a failure.
pub fn reserve_through_a_fault(
    vm: &mem_storage::FaultInjection<HostVirtualMemory>,
    mm: &mut MemoryManagement<ResourceStorage<HostResource>>,
    (plan, n): (fn(u64) -> mem_storage::FaultPlan, u64),
    bytes: u64,
    case: &str,
) {
    use mem_storage::VirtualMemory;
    let (allocated, physical) = (
        mm.stats().allocated_bytes.current,
        vm.vm_stats().physical_bytes,
    );
    vm.set_plan(plan(vm.calls() + n));
    let got = mm.reserve(bytes);
    vm.disarm();
    let Err(err) = got else {
        return;
    };
    assert_eq!(
        mm.stats().allocated_bytes.current,
        allocated,
        "{case}: {err}"
    );
    let now = vm.vm_stats().physical_bytes;
    let alone = matches!(plan(1), mem_storage::FaultPlan::Nth(_));
    assert!(
        !alone || now <= physical,
        "{case}: {now} > {physical} ({err})"
    );
    drop(mm.reserve(bytes).unwrap_or_else(|e| panic!("{case}: {e}")));
}
