//! The second half of the shared validation suite: unmapping, letting
//! chunks and ranges go, and byte access outside mapped memory.

use mem_storage::{StorageError, VirtualMemory};

use crate::suite::refused;

pub fn unmap_takes_whole_mappings_only<V: VirtualMemory>(vm: &V) {
    let g = vm.granularity();
    let range = vm.reserve_range(6 * g).unwrap();
    let (a, b) = (vm.create_chunk(2 * g).unwrap(), vm.create_chunk(g).unwrap());
    vm.map(range.id, 0, a).unwrap();
    vm.map(range.id, 3 * g, b).unwrap();
    let cases = [
        (4 * g, g, 4 * g, "nothing mapped there"),
        (0, g, 0, "half of a chunk"),
        (g, g, g, "the middle of a chunk"),
        (0, 4 * g, 2 * g, "a hole between two chunks"),
        (3 * g, 2 * g, 4 * g, "past the last chunk"),
    ];
    for (offset, bytes, first_bad, what) in cases {
        refused(
            vm,
            what,
            || vm.unmap(range.id, offset, bytes),
            |e| matches!(e, StorageError::NotMapped { at, .. } if *at == first_bad),
        );
    }
    assert_eq!(vm.unmap(range.id, 3 * g, g).unwrap(), vec![b]);
    refused(
        vm,
        "a second unmap",
        || vm.unmap(range.id, 3 * g, g),
        |e| matches!(e, StorageError::NotMapped { .. }),
    );
    assert_eq!(vm.unmap(range.id, 0, 2 * g).unwrap(), vec![a]);
    vm.release_chunk(a).unwrap();
    vm.release_chunk(b).unwrap();
    vm.free_range(range.id).unwrap();
}

pub fn mapped_chunks_and_used_ranges_cannot_be_let_go<V: VirtualMemory>(vm: &V) {
    let g = vm.granularity();
    let range = vm.reserve_range(4 * g).unwrap();
    let (a, b) = (vm.create_chunk(g).unwrap(), vm.create_chunk(2 * g).unwrap());
    vm.map(range.id, 0, a).unwrap();
    vm.map(range.id, 2 * g, b).unwrap();
    refused(
        vm,
        "release of a mapped chunk",
        || vm.release_chunk(b),
        |e| {
            matches!(e, StorageError::ChunkMapped { chunk, range: r, offset }
            if *chunk == b && *r == range.id && *offset == 2 * g)
        },
    );
    refused(
        vm,
        "free of a range with mappings",
        || vm.free_range(range.id),
        |e| {
            matches!(e, StorageError::RangeInUse { mapped_chunks: 2, mapped_bytes, .. }
            if *mapped_bytes == 3 * g)
        },
    );
    vm.unmap(range.id, 0, g).unwrap();
    vm.release_chunk(a).unwrap();
    refused(
        vm,
        "free with one mapping left",
        || vm.free_range(range.id),
        |e| {
            matches!(
                e,
                StorageError::RangeInUse {
                    mapped_chunks: 1,
                    ..
                }
            )
        },
    );
    vm.unmap(range.id, 2 * g, 2 * g).unwrap();
    vm.free_range(range.id).unwrap();
    // An unmapped chunk outlives its range and maps into another one.
    let other = vm.reserve_range(2 * g).unwrap();
    vm.map(other.id, 0, b).unwrap();
    vm.unmap(other.id, 0, 2 * g).unwrap();
    vm.release_chunk(b).unwrap();
    vm.free_range(other.id).unwrap();
}

pub fn access_outside_mapped_bytes_is_refused<V: VirtualMemory>(vm: &V) {
    let g = vm.granularity();
    let range = vm.reserve_range(4 * g).unwrap();
    let a = vm.create_chunk(g).unwrap();
    let base = range.base;
    let unmapped_from = |want: u64| move |e: &StorageError| matches!(e, StorageError::UnmappedAddress { first_unmapped, .. } if *first_unmapped == want);
    refused(
        vm,
        "fill before any map",
        || vm.fill_mapped(base, 1, 8),
        unmapped_from(base.0),
    );
    vm.map(range.id, g, a).unwrap();
    let at = |o: u64| mem_storage::DevicePtr(base.0 + o);
    vm.fill_mapped(at(g), 7, g).unwrap();
    vm.copy_mapped(at(g), at(g + g / 2), g / 2).unwrap();
    refused(
        vm,
        "fill running past the chunk",
        || vm.fill_mapped(at(g), 1, g + 1),
        unmapped_from(base.0 + 2 * g),
    );
    refused(
        vm,
        "fill starting before it",
        || vm.fill_mapped(at(g - 1), 1, 2),
        unmapped_from(base.0 + g - 1),
    );
    refused(
        vm,
        "copy from unmapped",
        || vm.copy_mapped(at(0), at(g), 8),
        unmapped_from(base.0),
    );
    refused(
        vm,
        "copy to unmapped",
        || vm.copy_mapped(at(g), at(3 * g), 8),
        unmapped_from(base.0 + 3 * g),
    );
    refused(
        vm,
        "fill past the range",
        || vm.fill_mapped(at(4 * g), 1, 1),
        unmapped_from(base.0 + 4 * g),
    );
    refused(
        vm,
        "fill at address 8",
        || vm.fill_mapped(mem_storage::DevicePtr(8), 1, 1),
        unmapped_from(8),
    );
    refused(
        vm,
        "fill that overflows",
        || vm.fill_mapped(at(g), 1, u64::MAX),
        unmapped_from(base.0 + 2 * g),
    );
    vm.unmap(range.id, g, g).unwrap();
    refused(
        vm,
        "fill after unmap",
        || vm.fill_mapped(at(g), 1, 1),
        unmapped_from(base.0 + g),
    );
    vm.release_chunk(a).unwrap();
    vm.free_range(range.id).unwrap();
}
