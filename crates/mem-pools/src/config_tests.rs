//! Unit tests of `config`.

use super::*;
use mem_storage::units::MIB;

fn props(max_page_size: u64, alignment: u64) -> MemoryDeviceProperties {
    MemoryDeviceProperties {
        max_page_size,
        alignment,
    }
}

#[test]
fn sub_slices_has_a_small_pool_a_growable_pool_and_an_exclusive_tail() {
    let pools = MemoryConfiguration::SubSlices.resolve(&props(24 * GIB / 4, 512));
    assert_eq!(pools.len(), 3);
    assert_eq!(
        pools[0].pool_type,
        PoolType::SlicedPages {
            page_size: 2 * MIB,
            max_slice_size: 64 * KIB
        }
    );
    assert!(matches!(pools[1].pool_type,
        PoolType::SlicedPages { page_size, max_slice_size } if page_size == 2 * MIB && max_slice_size > page_size));
    assert!(
        matches!(pools[2].pool_type, PoolType::ExclusivePages { max_alloc_size } if max_alloc_size == 6 * GIB)
    );
}

#[test]
fn exclusive_pages_are_distinct_aligned_buckets_up_to_the_largest_page() {
    let pools = MemoryConfiguration::ExclusivePages.resolve(&props(24 * GIB / 4, 512));
    assert_eq!(pools.len(), 24);
    let sizes: Vec<u64> = pools
        .iter()
        .map(|p| match p.pool_type {
            PoolType::ExclusivePages { max_alloc_size } => max_alloc_size,
            PoolType::SlicedPages { .. } | PoolType::VirtualArena { .. } => 0,
        })
        .collect();
    assert!(sizes.windows(2).all(|w| w[0] < w[1]));
    assert!(sizes.iter().all(|s| s % 512 == 0));
    assert_eq!(sizes[0], 32 * KIB);
    assert_eq!(*sizes.last().unwrap(), 6 * GIB);
}

#[test]
fn custom_sizes_are_clamped_to_the_device_never_refused() {
    let config = MemoryConfiguration::Custom {
        pool_options: vec![MemoryPoolOptions {
            pool_type: PoolType::SlicedPages {
                page_size: 0,
                max_slice_size: u64::MAX,
            },
            dealloc_period: None,
        }],
    };
    let pools = config.resolve(&props(MIB, 256));
    assert_eq!(
        pools[0].pool_type,
        PoolType::SlicedPages {
            page_size: 256,
            max_slice_size: MIB
        }
    );
}

#[test]
fn absurd_properties_resolve_to_usable_values() {
    let p = props(0, 0);
    assert_eq!(p.effective_alignment(), 1);
    assert_eq!(p.effective_max_page(), 1);
    let p = props(1000, 300);
    assert_eq!(p.effective_alignment(), 512);
    assert_eq!(p.effective_max_page(), 512);
    assert_eq!(props(u64::MAX, u64::MAX).effective_alignment(), 1 << 63);
    assert!(
        !MemoryConfiguration::ExclusivePages
            .resolve(&props(0, 0))
            .is_empty()
    );
}

#[test]
fn sub_slices_on_a_one_gib_page_device_slices_everything_and_has_no_exclusive_tail() {
    let pools = MemoryConfiguration::SubSlices.resolve(&props(GIB, 256));
    assert_eq!(pools.len(), 2);
    assert_eq!(
        pools[1].pool_type,
        PoolType::SlicedPages {
            page_size: 2 * MIB,
            max_slice_size: GIB
        }
    );
    assert_eq!(pools[1].growth, Growth::Fit);
}

#[test]
fn sub_slices_sends_only_allocations_above_one_gib_to_exclusive_pages() {
    let pools = MemoryConfiguration::SubSlices.resolve(&props(20 * GIB, 256));
    assert!(matches!(pools[1].pool_type,
        PoolType::SlicedPages { max_slice_size, .. } if max_slice_size == GIB));
    assert_eq!(
        pools[2].pool_type,
        PoolType::ExclusivePages {
            max_alloc_size: 20 * GIB
        }
    );
}

#[test]
fn a_fitted_page_is_the_next_whole_mib_strictly_above_the_allocation() {
    // ResNet-18's largest tensor, 24.5 MiB: a 25 MiB page, not doubling's 32.
    assert_eq!(Growth::Fit.grown(2 * MIB, 49 * MIB / 2, GIB, 256), 25 * MIB);
    assert_eq!(
        Growth::Doubling.grown(2 * MIB, 49 * MIB / 2, GIB, 256),
        32 * MIB
    );
    // Exactly 32 MiB leaves room beside it: 33 MiB.
    assert_eq!(Growth::Fit.grown(2 * MIB, 32 * MIB, GIB, 256), 33 * MIB);
}

#[test]
fn a_fitted_page_never_passes_the_largest_page_nor_breaks_a_coarse_alignment() {
    assert_eq!(Growth::Fit.grown(2 * MIB, GIB, GIB, 256), GIB);
    assert_eq!(Growth::Fit.grown(4 * MIB, 5 * MIB, GIB, 4 * MIB), 8 * MIB);
    assert_eq!(
        Growth::Fit.grown(2 * MIB, u64::MAX - 1, u64::MAX, 1),
        u64::MAX
    );
}

#[test]
fn custom_growable_pools_still_double() {
    let config = MemoryConfiguration::Custom {
        pool_options: vec![MemoryPoolOptions {
            pool_type: PoolType::SlicedPages {
                page_size: 64 * KIB,
                max_slice_size: MIB,
            },
            dealloc_period: None,
        }],
    };
    assert_eq!(config.resolve(&props(GIB, 256))[0].growth, Growth::Doubling);
}
