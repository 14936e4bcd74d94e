//! Virtual memory (reserve / create / map) on every backend: the shared
//! validation suite, real bytes on the host (and CUDA when present),
//! capacity (shared with a resource's pages), granularity, and the adaptors. Host tests mmap, which miri
//! cannot run, so they are ignored under miri.

mod adaptors;
mod bytes;
mod cuda;
mod faults;
mod share;
mod shared_capacity;
mod suite;
mod suite_release;

use mem_storage::units::{GIB, KIB, MIB};
use mem_storage::{
    DEFAULT_GRANULARITY, HostVirtualMemory, SimulatedVirtualMemory, StorageError, VirtualMemory,
};

/// A small host backend: 64 KiB granularity (a multiple of 4 KiB and 16 KiB
/// pages), 64 MiB of chunks at most.
pub fn small_host() -> HostVirtualMemory {
    HostVirtualMemory::with_granularity(64 * MIB, 64 * KIB).unwrap()
}

#[test]
#[cfg_attr(miri, ignore)]
fn host_virtual_memory_passes_the_validation_suite() {
    suite::run(&small_host());
    suite::run(&HostVirtualMemory::with_capacity(GIB).unwrap());
}

#[test]
#[cfg_attr(miri, ignore)]
fn host_virtual_memory_keeps_real_bytes_with_cumemmap_semantics() {
    bytes::run(&small_host());
    bytes::run(&HostVirtualMemory::new().unwrap());
}

#[test]
fn simulated_virtual_memory_passes_the_validation_suite() {
    let sim = SimulatedVirtualMemory::new(80 * GIB);
    suite::run(&sim);
    assert!(!sim.holds_memory());
    suite::run(&SimulatedVirtualMemory::with_granularity(GIB, 4 * KIB).unwrap());
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_default_granularity_is_cudas_2_mib_and_constructors_check_theirs() {
    assert_eq!(DEFAULT_GRANULARITY, 2 * MIB);
    assert_eq!(HostVirtualMemory::new().unwrap().granularity(), 2 * MIB);
    assert_eq!(SimulatedVirtualMemory::new(GIB).granularity(), 2 * MIB);
    for bad in [0, 3 * MIB, 1 << 33] {
        assert!(matches!(
            HostVirtualMemory::with_granularity(GIB, bad),
            Err(StorageError::InvalidArgument {
                parameter: "granularity",
                ..
            })
        ));
        assert!(SimulatedVirtualMemory::with_granularity(GIB, bad).is_err());
    }
    // Below the page size: a power of two, but not a multiple of a page.
    assert!(matches!(
        HostVirtualMemory::with_granularity(GIB, 512),
        Err(StorageError::NotGranular { value: 512, .. })
    ));
    assert_eq!(small_host().granularity(), 64 * KIB);
}

/// Out-of-memory at create past the capacity, on any backend of 4 MiB.
fn chunks_are_counted_against_the_capacity<V: VirtualMemory>(vm: &V) {
    let g = vm.granularity();
    assert_eq!(vm.physical_info().unwrap().total, 4 * MIB);
    let chunks: Vec<_> = (0..4 * MIB / g)
        .map(|_| vm.create_chunk(g).unwrap())
        .collect();
    assert_eq!(vm.physical_info().unwrap().free, 0);
    let err = vm.create_chunk(g).unwrap_err();
    assert!(
        matches!(err, StorageError::OutOfMemory { requested, free: 0, total, .. }
            if requested == g && total == 4 * MIB),
        "{err}"
    );
    assert!(err.is_retryable());
    let err = vm.create_chunk(8 * MIB).unwrap_err();
    assert!(
        matches!(err, StorageError::TooBig { max, .. } if max == 4 * MIB),
        "{err}"
    );
    assert!(!err.is_retryable());
    // Address space is not physical memory: reserving far more is fine.
    let range = vm.reserve_range(64 * MIB).unwrap();
    vm.release_chunk(chunks[0]).unwrap();
    assert_eq!(vm.physical_info().unwrap().free, g);
    let again = vm.create_chunk(g).unwrap();
    vm.map(range.id, 60 * MIB, again).unwrap();
    vm.unmap(range.id, 60 * MIB, g).unwrap();
    for c in chunks.into_iter().skip(1).chain([again]) {
        vm.release_chunk(c).unwrap();
    }
    vm.free_range(range.id).unwrap();
    let s = vm.vm_stats();
    assert!(s.is_idle(), "{s:?}");
    assert_eq!((s.peak_physical_bytes, s.refused_calls), (4 * MIB, 2));
}

#[test]
#[cfg_attr(miri, ignore)]
fn host_create_chunk_is_out_of_memory_past_its_capacity() {
    chunks_are_counted_against_the_capacity(
        &HostVirtualMemory::with_granularity(4 * MIB, 64 * KIB).unwrap(),
    );
}

#[test]
fn simulated_create_chunk_is_out_of_memory_past_its_capacity() {
    chunks_are_counted_against_the_capacity(&SimulatedVirtualMemory::new(4 * MIB));
}

#[test]
#[cfg_attr(miri, ignore)] // 40k chunks: seconds natively, an hour under miri
fn an_80_gib_arena_replays_on_the_simulated_device_without_memory() {
    let sim = SimulatedVirtualMemory::new(80 * GIB);
    let range = sim.reserve_range(160 * GIB).unwrap();
    let g = sim.granularity();
    let chunks: Vec<_> = (0..80 * GIB / g)
        .map(|_| sim.create_chunk(g).unwrap())
        .collect();
    for (i, &c) in chunks.iter().enumerate() {
        // Every other slot: live data spread over twice its size.
        sim.map(range.id, 2 * i as u64 * g, c).unwrap();
    }
    let s = sim.vm_stats();
    assert_eq!(
        (s.mapped_bytes, s.physical_bytes, s.virtual_bytes),
        (80 * GIB, 80 * GIB, 160 * GIB)
    );
    assert!(matches!(
        sim.create_chunk(g),
        Err(StorageError::OutOfMemory { free: 0, .. })
    ));
    assert!(matches!(
        sim.write_mapped(range.base, &[1]),
        Err(StorageError::Unsupported { .. })
    ));
    sim.fill_mapped(range.base, 0, g).unwrap();
    assert!(
        sim.fill_mapped(range.base, 0, 2 * g).is_err(),
        "the hole is not mapped"
    );
    for i in 0..chunks.len() as u64 {
        sim.unmap(range.id, 2 * i * g, g).unwrap();
    }
    for c in chunks {
        sim.release_chunk(c).unwrap();
    }
    sim.free_range(range.id).unwrap();
    assert!(sim.vm_stats().is_idle());
}

#[test]
fn a_range_larger_than_the_simulated_address_space_is_too_big() {
    let sim = SimulatedVirtualMemory::new(GIB);
    assert!(matches!(
        sim.reserve_range(1 << 63),
        Err(StorageError::TooBig { .. })
    ));
    let a = sim.reserve_range(1 << 62).unwrap();
    assert!(matches!(
        sim.reserve_range(1 << 62),
        Err(StorageError::NoAddressSpace { .. })
    ));
    sim.free_range(a.id).unwrap();
}

#[test]
#[cfg_attr(miri, ignore)]
fn threads_mapping_and_writing_at_once_each_see_only_their_own_bytes() {
    let vm = small_host();
    let g = vm.granularity();
    let range = vm.reserve_range(64 * g).unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (vm, range) = (&vm, range);
            s.spawn(move || {
                for round in 0..50u64 {
                    let offset = (t * 16 + round % 16) * g;
                    let chunk = vm.create_chunk(g).unwrap();
                    let at = vm.map(range.id, offset, chunk).unwrap();
                    let data = vec![(t * 50 + round) as u8; g as usize];
                    vm.write_mapped(at, &data).unwrap();
                    let mut back = vec![0; g as usize];
                    vm.read_mapped(at, &mut back).unwrap();
                    assert!(back == data, "thread {t} round {round} saw other bytes");
                    assert_eq!(vm.unmap(range.id, offset, g).unwrap(), [chunk]);
                    vm.release_chunk(chunk).unwrap();
                }
            });
        }
    });
    let s = vm.vm_stats();
    assert_eq!(
        (s.maps, s.unmaps, s.chunks_created, s.refused_calls),
        (200, 200, 200, 0)
    );
    vm.free_range(range.id).unwrap();
    assert!(vm.vm_stats().is_idle());
}
