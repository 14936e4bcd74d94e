//! The model's policy, one rule per test.

use gpumem::storage::DriverCall;
use gpumem::storage::units::{GIB, KIB, MIB};

use super::test_models::{expandable, model};
use super::*;

#[test]
fn sizes_round_to_512_bytes_or_to_power_of_two_divisions() {
    let p = Policy::default();
    assert_eq!(p.round_size(1), 512);
    assert_eq!(p.round_size(512), 512);
    assert_eq!(p.round_size(513), 1024);
    assert_eq!(p.round_size(MIB + 1), MIB + 512);
    let p4 = Policy {
        roundup_power2_divisions: 4,
        ..Policy::default()
    };
    // Between 1 MiB and 2 MiB the steps are 256 KiB.
    assert_eq!(p4.round_size(MIB + 1), MIB + 256 * KIB);
    assert_eq!(p4.round_size(MIB), MIB);
    assert_eq!(p4.round_size(1200 * KIB), 1280 * KIB);
    // At or below 512 B × divisions, plain 512 B rounding.
    assert_eq!(p4.round_size(1500), 1536);
}

#[test]
fn small_requests_get_2_mib_segments_and_large_ones_20_mib_or_their_rounded_size() {
    assert_eq!(Policy::pool(MIB), Pool::Small);
    assert_eq!(Policy::pool(MIB + 512), Pool::Large);
    assert_eq!(Policy::segment_size(512), 2 * MIB);
    assert_eq!(Policy::segment_size(MIB + 512), 20 * MIB);
    assert_eq!(Policy::segment_size(10 * MIB - 512), 20 * MIB);
    assert_eq!(Policy::segment_size(10 * MIB), 10 * MIB);
    assert_eq!(Policy::segment_size(11 * MIB + 1), 12 * MIB);

    let mut m = model(Policy::default(), GIB);
    m.malloc(1000, 0).unwrap();
    assert_eq!(m.reserved_bytes(), 2 * MIB);
    m.malloc(3 * MIB, 0).unwrap();
    assert_eq!(m.reserved_bytes(), 22 * MIB);
    m.malloc(25 * MIB, 0).unwrap();
    assert_eq!(m.reserved_bytes(), 48 * MIB);
    assert_eq!(m.calls().cuda_mallocs, 3);
}

#[test]
fn the_1_mib_loophole_of_the_devlog_reserves_22_mib() {
    // 2 MiB then 0.5 MiB: a 20 MiB large segment and a 2 MiB small one.
    let mut m = model(Policy::default(), GIB);
    m.malloc(2 * MIB, 0).unwrap();
    m.malloc(MIB / 2, 0).unwrap();
    assert_eq!(m.reserved_bytes(), 22 * MIB);
}

#[test]
fn small_blocks_split_at_512_bytes_of_rest_and_large_ones_above_1_mib() {
    let p = Policy::default();
    assert!(p.should_split(Pool::Small, 2 * MIB, 2 * MIB - 512));
    assert!(!p.should_split(Pool::Small, 2 * MIB, 2 * MIB));
    assert!(p.should_split(Pool::Large, 20 * MIB, 19 * MIB - 512));
    assert!(!p.should_split(Pool::Large, 20 * MIB, 19 * MIB));
    let capped = Policy {
        max_split_size: 16 * MIB,
        ..p
    };
    assert!(!capped.should_split(Pool::Large, 40 * MIB, 16 * MIB));
    assert!(expandable().should_split(Pool::Large, 20 * MIB, 20 * MIB - 512));

    // 19 MiB in a 20 MiB segment: the 1 MiB left is not split off, so a
    // second 19 MiB request needs its own segment.
    let mut m = model(p, GIB);
    m.malloc(19 * MIB, 0).unwrap();
    m.malloc(MIB + 512, 0).unwrap();
    assert_eq!(
        m.reserved_bytes(),
        40 * MIB,
        "the 1 MiB rest was not a block"
    );
}

#[test]
fn oversize_blocks_serve_only_oversize_requests_within_20_mib() {
    let p = Policy {
        max_split_size: 32 * MIB,
        ..Policy::default()
    };
    assert!(!p.may_take(40 * MIB, 4 * MIB));
    assert!(p.may_take(40 * MIB, 36 * MIB));
    assert!(!p.may_take(60 * MIB, 36 * MIB));
    let mut m = model(p, GIB);
    let big = m.malloc(40 * MIB, 0).unwrap();
    m.free(big).unwrap();
    m.malloc(4 * MIB, 0).unwrap();
    assert_eq!(
        m.reserved_bytes(),
        60 * MIB,
        "the cached 40 MiB was not split"
    );
}

#[test]
fn best_fit_takes_the_smallest_cached_block_and_freed_neighbours_merge() {
    let mut m = model(Policy::default(), GIB);
    let a = m.malloc(4 * MIB, 0).unwrap();
    let b = m.malloc(2 * MIB, 0).unwrap();
    let c = m.malloc(8 * MIB, 0).unwrap();
    assert_eq!(
        m.calls().cuda_mallocs,
        1,
        "one 20 MiB segment holds all three"
    );
    m.free(a).unwrap();
    m.free(c).unwrap();
    // 4 MiB and 14 MiB free: a 3 MiB request takes the 4 MiB block.
    assert_eq!(m.malloc(3 * MIB, 0).unwrap(), a);
    m.free(a).unwrap();
    m.free(b).unwrap();
    // All merged back into one 20 MiB block, which a 20 MiB request takes.
    assert_eq!(m.malloc(20 * MIB, 0).unwrap(), a);
    assert_eq!(m.reserved_bytes(), 20 * MIB);
}

#[test]
fn a_cached_block_is_never_reused_by_another_stream() {
    let mut m = model(Policy::default(), GIB);
    let a = m.malloc(4 * MIB, 0).unwrap();
    m.free(a).unwrap();
    let b = m.malloc(4 * MIB, 1).unwrap();
    assert_ne!(a, b);
    assert_eq!(m.reserved_bytes(), 40 * MIB);
    assert_eq!(m.malloc(4 * MIB, 0).unwrap(), a, "its own stream reuses it");
}

#[test]
fn out_of_memory_frees_whole_cached_segments_and_retries() {
    let mut m = model(Policy::default(), 64 * MIB);
    let a = m.malloc(30 * MIB, 0).unwrap();
    let b = m.malloc(30 * MIB, 1).unwrap();
    m.free(a).unwrap();
    m.free(b).unwrap();
    // 60 MiB cached; 40 MiB on stream 2 fits only after the release.
    m.malloc(40 * MIB, 2).unwrap();
    assert_eq!(m.calls().retries, 1);
    assert_eq!(m.calls().cuda_frees, 2);
    assert_eq!(m.reserved_bytes(), 40 * MIB);
    assert_eq!(m.peak_reserved_bytes(), 60 * MIB);
    assert_eq!(m.driver_time().calls(DriverCall::Free), 2);
    let err = m.malloc(40 * MIB, 2).unwrap_err();
    assert!(matches!(err, ModelError::OutOfMemory { requested, .. } if requested == 40 * MIB));
    assert!(err.to_string().contains("out of memory"), "{err}");
}

#[test]
fn emptying_the_cache_waits_for_the_device_once_per_freed_segment_and_not_at_all_with_none() {
    // `release_cached_blocks` makes no device-wide wait of its own; each
    // `cudaFree` synchronizes the device.
    let mut m = model(Policy::default(), GIB);
    let held = m.malloc(4 * MIB, 0).unwrap();
    m.release_cached();
    assert_eq!(m.driver_time().calls(DriverCall::DeviceSynchronize), 0);
    let a = m.malloc(30 * MIB, 0).unwrap();
    let b = m.malloc(30 * MIB, 1).unwrap();
    m.free(a).unwrap();
    m.free(b).unwrap();
    m.free(held).unwrap();
    m.release_cached();
    assert_eq!(m.calls().cuda_frees, 3);
    assert_eq!(m.driver_time().calls(DriverCall::DeviceSynchronize), 3);
}

#[test]
fn a_split_segment_is_not_released_while_part_of_it_is_live() {
    let mut m = model(Policy::default(), 40 * MIB);
    let _held = m.malloc(4 * MIB, 0).unwrap();
    assert!(m.malloc(30 * MIB, 0).is_err(), "20 + 30 MiB > 40 MiB");
    assert_eq!(m.calls().cuda_frees, 0);
    assert_eq!(m.reserved_bytes(), 20 * MIB);
}

#[test]
fn freeing_twice_or_an_unknown_address_is_a_typed_error() {
    let mut m = model(Policy::default(), GIB);
    let a = m.malloc(KIB, 0).unwrap();
    m.free(a).unwrap();
    assert_eq!(m.free(a), Err(ModelError::NotAllocated { addr: a }));
    assert!(m.free(12345).is_err());
}

#[test]
fn the_devlogs_16_then_32_mib_case_reserves_256_mib_for_128_mib_live() {
    // Eight 16 MiB segments, all freed, cannot serve 32 MiB (no merging
    // across segments): four new 32 MiB segments, as the devlog reports.
    let mut m = model(Policy::default(), GIB);
    let small: Vec<u64> = (0..8).map(|_| m.malloc(16 * MIB, 0).unwrap()).collect();
    for a in small {
        m.free(a).unwrap();
    }
    for _ in 0..4 {
        m.malloc(32 * MIB, 0).unwrap();
    }
    assert_eq!(m.live_bytes(), 128 * MIB);
    assert_eq!(m.reserved_bytes(), 256 * MIB);
    // With expandable segments the freed 128 MiB is one free run to reuse.
    let mut m = model(expandable(), GIB);
    let small: Vec<u64> = (0..8).map(|_| m.malloc(16 * MIB, 0).unwrap()).collect();
    for a in small {
        m.free(a).unwrap();
    }
    for _ in 0..4 {
        m.malloc(32 * MIB, 0).unwrap();
    }
    assert_eq!(m.reserved_bytes(), 140 * MIB, "seven 20 MiB pages");
}

#[test]
fn with_max_split_size_out_of_memory_first_frees_only_oversize_blocks() {
    let p = Policy {
        max_split_size: 32 * MIB,
        ..Policy::default()
    };
    let mut m = model(p, 128 * MIB);
    let a = m.malloc(40 * MIB, 0).unwrap();
    let b = m.malloc(40 * MIB, 0).unwrap();
    let c = m.malloc(4 * MIB, 0).unwrap();
    for addr in [a, b, c] {
        m.free(addr).unwrap();
    }
    assert_eq!(m.reserved_bytes(), 100 * MIB);
    // 60 MiB more does not fit: the two 40 MiB oversize blocks go, the
    // cached 20 MiB segment of the 4 MiB block stays.
    m.malloc(60 * MIB, 0).unwrap();
    assert_eq!(m.calls().cuda_frees, 2);
    assert_eq!(m.reserved_bytes(), 80 * MIB);
    // A wait per `cudaFree`, none for the retry itself.
    assert_eq!(m.driver_time().calls(DriverCall::DeviceSynchronize), 2);
}
