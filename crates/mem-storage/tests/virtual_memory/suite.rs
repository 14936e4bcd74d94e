//! The validation every virtual-memory backend shares, call for call: each
//! check takes any `VirtualMemory` and leaves it holding nothing, and each
//! refusal is the documented typed error and changes nothing (the counters
//! other than `refused_calls` stay put).

use mem_storage::{ChunkId, RangeId, StorageError, VirtualMemory, VirtualMemoryStats};

use crate::suite_release;

/// Run every check on `vm`; it must hold nothing before and after.
pub fn run<V: VirtualMemory>(vm: &V) {
    assert!(vm.vm_stats().is_idle(), "{:?}", vm.vm_stats());
    sizes_and_offsets_must_be_granular(vm);
    unknown_and_stale_ids_are_refused(vm);
    a_map_never_overlaps_and_a_chunk_is_mapped_once(vm);
    suite_release::unmap_takes_whole_mappings_only(vm);
    suite_release::mapped_chunks_and_used_ranges_cannot_be_let_go(vm);
    suite_release::access_outside_mapped_bytes_is_refused(vm);
    let end = vm.vm_stats();
    assert!(end.is_idle(), "the suite left something behind: {end:?}");
    assert_eq!(end.maps, end.unmaps);
}

/// The counters without `refused_calls`: what a refusal must not move.
fn held(s: VirtualMemoryStats) -> VirtualMemoryStats {
    VirtualMemoryStats {
        refused_calls: 0,
        ..s
    }
}

/// `call` must fail with an error `matches` accepts and change nothing.
pub fn refused<V: VirtualMemory, T: std::fmt::Debug>(
    vm: &V,
    what: &str,
    call: impl FnOnce() -> Result<T, StorageError>,
    matches: impl FnOnce(&StorageError) -> bool,
) {
    let before = vm.vm_stats();
    let err = call().expect_err(what);
    assert!(matches(&err), "{what}: unexpected error {err}");
    let after = vm.vm_stats();
    assert_eq!(held(before), held(after), "{what} changed something");
}

fn sizes_and_offsets_must_be_granular<V: VirtualMemory>(vm: &V) {
    let g = vm.granularity();
    assert!(g.is_power_of_two());
    for bytes in [0, 1, g - 1, g + 1] {
        refused(
            vm,
            "reserve",
            || vm.reserve_range(bytes),
            |e| {
                matches!(e, StorageError::NotGranular { parameter: "bytes", value, granularity, .. }
                if *value == bytes && *granularity == g)
            },
        );
        refused(
            vm,
            "create",
            || vm.create_chunk(bytes),
            |e| matches!(e, StorageError::NotGranular { .. }),
        );
    }
    let range = vm.reserve_range(4 * g).unwrap();
    assert_eq!(
        range.base.0 % g,
        0,
        "a range base is aligned to the granularity"
    );
    let chunk = vm.create_chunk(2 * g).unwrap();
    refused(
        vm,
        "map at an unaligned offset",
        || vm.map(range.id, g / 2, chunk),
        |e| {
            matches!(
                e,
                StorageError::NotGranular {
                    parameter: "offset",
                    ..
                }
            )
        },
    );
    refused(
        vm,
        "map past the end",
        || vm.map(range.id, 3 * g, chunk),
        |e| {
            matches!(e, StorageError::OutsideRange { offset, bytes, len, .. }
            if (*offset, *bytes, *len) == (3 * g, 2 * g, 4 * g))
        },
    );
    refused(
        vm,
        "map far past the end",
        || vm.map(range.id, u64::MAX - g + 1, chunk),
        |e| matches!(e, StorageError::OutsideRange { .. }),
    );
    refused(
        vm,
        "unmap of 0 bytes",
        || vm.unmap(range.id, 0, 0),
        |e| matches!(e, StorageError::NotGranular { .. }),
    );
    refused(
        vm,
        "unmap past the end",
        || vm.unmap(range.id, 2 * g, 4 * g),
        |e| matches!(e, StorageError::OutsideRange { .. }),
    );
    assert_eq!(vm.chunk_bytes(chunk).unwrap(), 2 * g);
    assert_eq!(vm.range_info(range.id).unwrap(), range);
    vm.release_chunk(chunk).unwrap();
    vm.free_range(range.id).unwrap();
}

fn unknown_and_stale_ids_are_refused<V: VirtualMemory>(vm: &V) {
    let g = vm.granularity();
    let range = vm.reserve_range(g).unwrap();
    let chunk = vm.create_chunk(g).unwrap();
    vm.release_chunk(chunk).unwrap();
    vm.free_range(range.id).unwrap();
    let never = (RangeId(u64::MAX), ChunkId(u64::MAX));
    for (r, c) in [(range.id, chunk), never] {
        refused(
            vm,
            "free of a stale range",
            || vm.free_range(r),
            |e| matches!(e, StorageError::UnknownRange { range, .. } if *range == r),
        );
        refused(
            vm,
            "release of a stale chunk",
            || vm.release_chunk(c),
            |e| matches!(e, StorageError::UnknownChunk { chunk, .. } if *chunk == c),
        );
        assert!(matches!(
            vm.range_info(r),
            Err(StorageError::UnknownRange { .. })
        ));
        assert!(matches!(
            vm.chunk_bytes(c),
            Err(StorageError::UnknownChunk { .. })
        ));
    }
    // New ids never name the old ones.
    let range2 = vm.reserve_range(g).unwrap();
    let chunk2 = vm.create_chunk(g).unwrap();
    assert_ne!(range2.id, range.id);
    assert_ne!(chunk2, chunk);
    refused(
        vm,
        "map of a stale chunk",
        || vm.map(range2.id, 0, chunk),
        |e| matches!(e, StorageError::UnknownChunk { .. }),
    );
    refused(
        vm,
        "map into a stale range",
        || vm.map(range.id, 0, chunk2),
        |e| matches!(e, StorageError::UnknownRange { .. }),
    );
    vm.release_chunk(chunk2).unwrap();
    vm.free_range(range2.id).unwrap();
}

fn a_map_never_overlaps_and_a_chunk_is_mapped_once<V: VirtualMemory>(vm: &V) {
    let g = vm.granularity();
    let range = vm.reserve_range(8 * g).unwrap();
    let (a, big) = (vm.create_chunk(g).unwrap(), vm.create_chunk(2 * g).unwrap());
    let at = vm.map(range.id, 2 * g, a).unwrap();
    assert_eq!(
        at.0,
        range.base.0 + 2 * g,
        "map answers the chunk's address"
    );
    refused(
        vm,
        "double map",
        || vm.map(range.id, 5 * g, a),
        |e| matches!(e, StorageError::ChunkMapped { chunk, offset, .. } if *chunk == a && *offset == 2 * g),
    );
    for offset in [g, 2 * g] {
        refused(
            vm,
            "overlapping map",
            || vm.map(range.id, offset, big),
            |e| {
                matches!(e, StorageError::AlreadyMapped { mapped_offset, mapped_chunk, .. }
                if *mapped_offset == 2 * g && *mapped_chunk == a)
            },
        );
    }
    // Right next to it on both sides is fine.
    vm.map(range.id, 3 * g, big).unwrap();
    let c = vm.create_chunk(g).unwrap();
    vm.map(range.id, g, c).unwrap();
    let s = vm.vm_stats();
    assert_eq!((s.maps - s.unmaps, s.mapped_bytes), (3, 4 * g));
    assert_eq!(vm.unmap(range.id, g, 4 * g).unwrap(), vec![c, a, big]);
    for chunk in [a, big, c] {
        vm.release_chunk(chunk).unwrap();
    }
    vm.free_range(range.id).unwrap();
}
