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
        t.add_chunk(claim, 0)
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
    let removed = t.check_unmap(r, G, 3 * G).unwrap();
    assert_eq!(removed.iter().map(|m| m.chunk).collect::<Vec<_>>(), [a, b]);
    t.commit_unmap(r, &removed);
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
