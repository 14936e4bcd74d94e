//! Real bytes through mapped addresses, for every backend that holds them
//! (host; CUDA when a device is present): cuMemMap semantics, checked byte
//! by byte.

use mem_storage::{DevicePtr, StorageError, VaRange, VirtualMemory};

/// Run every byte check on `vm`; it must hold nothing before and after.
pub fn run<V: VirtualMemory>(vm: &V) {
    assert!(vm.holds_memory());
    a_fresh_chunk_reads_zeros(vm);
    a_chunk_keeps_its_bytes_across_unmap_and_remap(vm);
    a_chunk_remapped_elsewhere_shows_the_same_bytes(vm);
    contents_survive_when_other_chunks_are_unmapped_and_remapped(vm);
    a_span_across_two_adjacent_chunks_reads_and_writes_across_the_boundary(vm);
    unmapped_addresses_are_errors_for_every_kind_of_access(vm);
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
}

fn pattern(seed: u8, len: u64) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn read<V: VirtualMemory>(vm: &V, at: DevicePtr, len: u64) -> Vec<u8> {
    let mut out = vec![0xEE; len as usize];
    vm.read_mapped(at, &mut out).unwrap();
    out
}

fn at(range: &VaRange, offset: u64) -> DevicePtr {
    range.at(offset).unwrap()
}

fn a_fresh_chunk_reads_zeros<V: VirtualMemory>(vm: &V) {
    let g = vm.granularity();
    let range = vm.reserve_range(g).unwrap();
    // A released chunk's bytes never reach a new chunk.
    let old = vm.create_chunk(g).unwrap();
    vm.map(range.id, 0, old).unwrap();
    vm.fill_mapped(range.base, 0xAB, g).unwrap();
    vm.unmap(range.id, 0, g).unwrap();
    vm.release_chunk(old).unwrap();
    let fresh = vm.create_chunk(g).unwrap();
    vm.map(range.id, 0, fresh).unwrap();
    assert!(read(vm, range.base, g).iter().all(|&b| b == 0));
    vm.unmap(range.id, 0, g).unwrap();
    vm.release_chunk(fresh).unwrap();
    vm.free_range(range.id).unwrap();
}

fn a_chunk_keeps_its_bytes_across_unmap_and_remap<V: VirtualMemory>(vm: &V) {
    let g = vm.granularity();
    let range = vm.reserve_range(2 * g).unwrap();
    let chunk = vm.create_chunk(g).unwrap();
    let data = pattern(1, g);
    vm.map(range.id, 0, chunk).unwrap();
    vm.write_mapped(range.base, &data).unwrap();
    vm.unmap(range.id, 0, g).unwrap();
    vm.map(range.id, 0, chunk).unwrap();
    assert_eq!(read(vm, range.base, g), data);
    vm.unmap(range.id, 0, g).unwrap();
    vm.release_chunk(chunk).unwrap();
    vm.free_range(range.id).unwrap();
}

fn a_chunk_remapped_elsewhere_shows_the_same_bytes<V: VirtualMemory>(vm: &V) {
    let g = vm.granularity();
    let (first, second) = (
        vm.reserve_range(4 * g).unwrap(),
        vm.reserve_range(g).unwrap(),
    );
    let chunk = vm.create_chunk(g).unwrap();
    let data = pattern(2, g);
    vm.map(first.id, 0, chunk).unwrap();
    vm.write_mapped(first.base, &data).unwrap();
    vm.unmap(first.id, 0, g).unwrap();
    // Another offset of the same range, then another range.
    vm.map(first.id, 3 * g, chunk).unwrap();
    assert_eq!(read(vm, at(&first, 3 * g), g), data);
    vm.unmap(first.id, 3 * g, g).unwrap();
    vm.map(second.id, 0, chunk).unwrap();
    assert_eq!(read(vm, second.base, g), data);
    vm.unmap(second.id, 0, g).unwrap();
    vm.release_chunk(chunk).unwrap();
    vm.free_range(first.id).unwrap();
    vm.free_range(second.id).unwrap();
}

fn contents_survive_when_other_chunks_are_unmapped_and_remapped<V: VirtualMemory>(vm: &V) {
    let g = vm.granularity();
    let range = vm.reserve_range(4 * g).unwrap();
    let chunks: Vec<_> = (0..4).map(|_| vm.create_chunk(g).unwrap()).collect();
    for (i, &c) in chunks.iter().enumerate() {
        let offset = i as u64 * g;
        vm.map(range.id, offset, c).unwrap();
        vm.write_mapped(at(&range, offset), &pattern(10 + i as u8, g))
            .unwrap();
    }
    // Swap chunks 1 and 3 around; 0 and 2 stay put.
    vm.unmap(range.id, g, g).unwrap();
    vm.unmap(range.id, 3 * g, g).unwrap();
    vm.map(range.id, g, chunks[3]).unwrap();
    vm.map(range.id, 3 * g, chunks[1]).unwrap();
    let expected = [10, 13, 12, 11];
    for (i, seed) in expected.into_iter().enumerate() {
        let offset = i as u64 * g;
        assert_eq!(
            read(vm, at(&range, offset), g),
            pattern(seed, g),
            "slot {i}"
        );
    }
    vm.unmap(range.id, 0, 4 * g).unwrap();
    for c in chunks {
        vm.release_chunk(c).unwrap();
    }
    vm.free_range(range.id).unwrap();
}

fn a_span_across_two_adjacent_chunks_reads_and_writes_across_the_boundary<V: VirtualMemory>(
    vm: &V,
) {
    let g = vm.granularity();
    let range = vm.reserve_range(3 * g).unwrap();
    let (a, b) = (vm.create_chunk(g).unwrap(), vm.create_chunk(g).unwrap());
    vm.map(range.id, 0, a).unwrap();
    vm.map(range.id, g, b).unwrap();
    let across = at(&range, g - 100);
    let data = pattern(3, 200);
    vm.write_mapped(across, &data).unwrap();
    assert_eq!(read(vm, across, 200), data);
    vm.fill_mapped(at(&range, g - 8), 0x5A, 16).unwrap();
    vm.copy_mapped(at(&range, g - 8), at(&range, 0), 16)
        .unwrap();
    assert_eq!(read(vm, range.base, 16), vec![0x5A; 16]);
    // Each chunk took its half: b alone at the start of another range.
    vm.unmap(range.id, 0, 2 * g).unwrap();
    vm.map(range.id, 2 * g, b).unwrap();
    let moved = read(vm, at(&range, 2 * g), 100);
    assert_eq!(moved[..8], [0x5A; 8]);
    assert_eq!(moved[8..], data[108..]);
    vm.unmap(range.id, 2 * g, g).unwrap();
    vm.release_chunk(a).unwrap();
    vm.release_chunk(b).unwrap();
    vm.free_range(range.id).unwrap();
}

fn unmapped_addresses_are_errors_for_every_kind_of_access<V: VirtualMemory>(vm: &V) {
    let g = vm.granularity();
    let range = vm.reserve_range(2 * g).unwrap();
    let chunk = vm.create_chunk(g).unwrap();
    let unmapped = |r: Result<(), StorageError>| {
        assert!(
            matches!(r, Err(StorageError::UnmappedAddress { .. })),
            "{r:?}"
        )
    };
    let mut buf = [0u8; 16];
    // Reserved but never mapped: on the host these pages are PROT_NONE, so
    // touching them would be a SIGSEGV; the table refuses first.
    unmapped(vm.read_mapped(range.base, &mut buf));
    unmapped(vm.write_mapped(range.base, &buf));
    vm.map(range.id, 0, chunk).unwrap();
    vm.write_mapped(range.base, &[9; 16]).unwrap();
    unmapped(vm.read_mapped(at(&range, g - 8), &mut buf));
    unmapped(vm.write_mapped(at(&range, g), &buf));
    unmapped(vm.copy_mapped(range.base, at(&range, g), 16));
    vm.unmap(range.id, 0, g).unwrap();
    unmapped(vm.read_mapped(range.base, &mut buf));
    vm.release_chunk(chunk).unwrap();
    vm.free_range(range.id).unwrap();
    unmapped(vm.read_mapped(range.base, &mut buf));
    unmapped(vm.fill_mapped(range.base, 0, 1));
}
