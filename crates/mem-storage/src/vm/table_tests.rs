//! The table alone, without a backend: small enough for miri
//! (`cargo xtask miri` runs this crate's lib tests), covering the address
//! walk that guards every host byte access.

use crate::StorageError;
use crate::physical::PhysicalMemory;
use crate::vm::check_granularity;
use crate::vm::table::VmTable;
use crate::vm::{ChunkId, RangeId};

const G: u64 = 4096;

/// A table with one range of 8 granules at `0x10_0000` and chunks of 1, 2
/// and 1 granules mapped at granules 1, 2..4 and 6.
fn table() -> (VmTable, RangeId, [ChunkId; 3]) {
    let mut t = VmTable::new("test", G, PhysicalMemory::new(64 * G));
    let r = t.add_range(0x10_0000, 8 * G).id;
    let chunks = [G, 2 * G, G].map(|bytes| {
        let claim = t.check_create(bytes).unwrap();
        t.add_chunk(claim, 0).unwrap()
    });
    for (c, granule) in chunks.into_iter().zip([1, 2, 6]) {
        let m = t.check_map(r, granule * G, c).unwrap();
        t.commit_map(r, m);
    }
    (t, r, chunks)
}

fn first_unmapped(t: &VmTable, ptr: u64, len: u64) -> Option<u64> {
    match t.check_access(ptr, len) {
        Ok(_) => None,
        Err(StorageError::UnmappedAddress { first_unmapped, .. }) => Some(first_unmapped),
        Err(other) => panic!("unexpected {other}"),
    }
}

#[test]
fn an_access_is_allowed_exactly_over_contiguous_mappings() {
    let (t, _, _) = table();
    let base = 0x10_0000;
    assert_eq!(
        first_unmapped(&t, base + G, 3 * G),
        None,
        "three chunks side by side"
    );
    assert_eq!(first_unmapped(&t, base + 4 * G - 1, 1), None);
    assert_eq!(first_unmapped(&t, base + G - 1, 2), Some(base + G - 1));
    assert_eq!(first_unmapped(&t, base + 3 * G, 2 * G), Some(base + 4 * G));
    assert_eq!(first_unmapped(&t, base + 6 * G, G + 1), Some(base + 7 * G));
    assert_eq!(
        first_unmapped(&t, base + 6 * G, u64::MAX),
        Some(base + 7 * G)
    );
    assert_eq!(first_unmapped(&t, base + 9 * G, 1), Some(base + 9 * G));
    assert_eq!(first_unmapped(&t, base - 1, 1), Some(base - 1));
    assert_eq!(
        first_unmapped(&t, base + 8 * G, 0),
        None,
        "0 bytes at the end"
    );
}

#[test]
fn unmapping_commits_exactly_the_checked_mappings() {
    let (mut t, r, [a, b, c]) = table();
    let plan = t.check_unmap(r, G, 3 * G).unwrap();
    let planned: Vec<_> = t.unmapping(&plan).iter().map(|m| m.chunk).collect();
    assert_eq!(planned, [a, b]);
    assert_eq!(t.commit_unmap(&plan, plan.count), [a, b]);
    assert_eq!(
        (t.stats.maps, t.stats.unmaps, t.stats.mapped_bytes),
        (3, 2, G)
    );
    assert!(t.chunk(a).unwrap().mapped_at.is_none());
    assert_eq!(t.chunk(c).unwrap().mapped_at, Some((r, 6 * G)));
    assert!(matches!(
        t.check_free(r),
        Err(StorageError::RangeInUse {
            mapped_chunks: 1,
            ..
        })
    ));
}

#[test]
fn a_partly_committed_unmap_removes_only_the_first_mappings() {
    // As when the driver fails on the second chunk of an unmap.
    let (mut t, r, [a, b, _]) = table();
    let plan = t.check_unmap(r, G, 3 * G).unwrap();
    assert_eq!(t.commit_unmap(&plan, 1), [a]);
    assert_eq!(t.chunk(b).unwrap().mapped_at, Some((r, 2 * G)));
    assert!(matches!(
        t.check_unmap(r, G, G),
        Err(StorageError::NotMapped { at, .. }) if at == G
    ));
    assert_eq!(
        t.commit_unmap(&t.check_unmap(r, 2 * G, 2 * G).unwrap(), 1),
        [b]
    );
    assert_eq!(t.stats.mapped_bytes, G);
}

#[test]
fn a_map_over_a_mapped_span_names_the_mapping_that_starts_last_in_it() {
    let (mut t, r, [_, b, c]) = table();
    let claim = t.check_create(4 * G).unwrap();
    let big = t.add_chunk(claim, 0).unwrap();
    // 3..7 meets b (2..4) and c (6); c starts last.
    for (offset, in_the_way, at) in [(3 * G, c, 6 * G), (0, b, 2 * G)] {
        match t.check_map(r, offset, big) {
            Err(StorageError::AlreadyMapped {
                mapped_chunk,
                mapped_offset,
                ..
            }) => assert_eq!((mapped_chunk, mapped_offset), (in_the_way, at)),
            other => panic!("expected AlreadyMapped, got {other:?}"),
        }
    }
    assert!(matches!(
        t.check_map(r, 5 * G, big),
        Err(StorageError::OutsideRange { .. })
    ));
    let small = t.check_create(G).unwrap();
    let small = t.add_chunk(small, 0).unwrap();
    let m = t.check_map(r, 7 * G, small).unwrap();
    t.commit_map(r, m);
}

#[test]
fn a_mapping_far_into_a_huge_range_is_checked_like_a_near_one() {
    let mut t = VmTable::new("test", G, PhysicalMemory::new(64 * G));
    let r = t.add_range(1 << 50, 1 << 60).id;
    let far = (1 << 59) - 2 * G;
    let claim = t.check_create(2 * G).unwrap();
    let chunk = t.add_chunk(claim, 0).unwrap();
    t.commit_map(r, t.check_map(r, far, chunk).unwrap());
    assert!(t.check_access((1 << 50) + far + G, 2 * G).is_err());
    assert!(t.check_access((1 << 50) + far + 1, 2 * G - 1).is_ok());
    let other = t.check_create(G).unwrap();
    let other = t.add_chunk(other, 0).unwrap();
    assert!(matches!(
        t.check_map(r, far + G, other),
        Err(StorageError::AlreadyMapped { mapped_offset, .. }) if mapped_offset == far
    ));
    assert!(matches!(
        t.check_unmap(r, far, G),
        Err(StorageError::NotMapped { .. })
    ));
    let plan = t.check_unmap(r, far, 2 * G).unwrap();
    assert_eq!(t.commit_unmap(&plan, plan.count), [chunk]);
    assert!(t.check_free(r).is_ok());
}

#[test]
fn a_huge_chunk_at_a_one_byte_granularity_maps_checks_and_unmaps_whole() {
    let mut t = VmTable::new("test", 1, PhysicalMemory::new(1 << 62));
    let r = t.add_range(1 << 44, 1 << 61).id;
    let claim = t.check_create(1 << 40).unwrap();
    let huge = t.add_chunk(claim, 0).unwrap();
    t.commit_map(r, t.check_map(r, 0, huge).unwrap());
    assert!(t.check_access((1 << 44) + (1 << 40) - 8, 8).is_ok());
    assert!(t.check_access((1 << 44) + (1 << 40) - 8, 9).is_err());
    let claim = t.check_create(1 << 20).unwrap();
    let small = t.add_chunk(claim, 0).unwrap();
    assert!(matches!(
        t.check_map(r, 1 << 39, small),
        Err(StorageError::AlreadyMapped {
            mapped_offset: 0,
            ..
        })
    ));
    let plan = t.check_unmap(r, 0, 1 << 40).unwrap();
    assert_eq!(t.commit_unmap(&plan, plan.count), [huge]);
    t.commit_map(r, t.check_map(r, 1 << 39, small).unwrap());
}

#[test]
fn a_granularity_must_be_a_power_of_two_multiple_of_the_minimum() {
    assert!(check_granularity("t", 2 << 20, 4096).is_ok());
    assert!(check_granularity("t", 1 << 32, 1).is_ok());
    assert!(matches!(
        check_granularity("t", 2048, 4096),
        Err(StorageError::NotGranular {
            value: 2048,
            granularity: 4096,
            ..
        })
    ));
    for bad in [0, 3 << 20, 1 << 33] {
        assert!(matches!(
            check_granularity("t", bad, 1),
            Err(StorageError::InvalidArgument { .. })
        ));
    }
}
