//! RMM-style conformance checks any `DeviceResource` must pass.
//!
//! Byte checks run only where the resource holds memory; on a simulated
//! device the same programs run with accounting and range checks alone.

use mem_storage::{DevicePtr, DeviceResource, StorageError, StreamId};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::pattern::pattern;

const S: StreamId = StreamId::DEFAULT;
const PIB: u64 = 1 << 50;

/// Run every check against `r`.
pub fn run<R: DeviceResource>(r: &R) {
    zero_bytes_get_unique_aligned_addresses(r);
    for size in [4, 1 << 10, 1 << 20] {
        a_fixed_size_round_trips(r, size);
    }
    a_petabyte_request_fails_typed_and_leaves_the_resource_usable(r);
    random_sizes_are_aligned_disjoint_and_hold_their_bytes(r, 100, 7);
    random_mixed_allocate_free_ends_with_everything_given_back(r, 600, 11);
    out_of_bounds_and_unknown_pointers_are_rejected(r);
    fill_and_copy_move_the_right_bytes(r);
    concurrent_users_never_see_each_others_bytes(r);
}

fn assert_aligned<R: DeviceResource>(r: &R, ptr: DevicePtr) {
    assert!(
        r.alignment().is_power_of_two(),
        "alignment {} is not a power of two",
        r.alignment()
    );
    assert_eq!(
        ptr.0 % r.alignment(),
        0,
        "{ptr} is not aligned to {}",
        r.alignment()
    );
}

fn zero_bytes_get_unique_aligned_addresses<R: DeviceResource>(r: &R) {
    let a = r.allocate(0, S).expect("a 0-byte allocation succeeds");
    let b = r
        .allocate(0, S)
        .expect("a second 0-byte allocation succeeds");
    assert_ne!(a, b, "two live 0-byte allocations share an address");
    assert_aligned(r, a);
    assert_aligned(r, b);
    r.deallocate(a, 0, S).unwrap();
    r.deallocate(b, 0, S).unwrap();
}

fn a_fixed_size_round_trips<R: DeviceResource>(r: &R, size: u64) {
    let ptr = r
        .allocate(size, S)
        .unwrap_or_else(|e| panic!("allocating {size} bytes: {e}"));
    assert_aligned(r, ptr);
    if r.holds_memory() {
        let data = pattern(size, size as usize);
        r.write(ptr, &data, S).unwrap();
        let mut back = vec![0u8; size as usize];
        r.read(ptr, &mut back, S).unwrap();
        assert_eq!(back, data, "{size}-byte round trip changed the bytes");
        // A partial read from inside the allocation sees the same bytes.
        let half = size / 2;
        let mut tail = vec![0u8; (size - half) as usize];
        r.read(DevicePtr(ptr.0 + half), &mut tail, S).unwrap();
        assert_eq!(tail, data[half as usize..]);
    } else {
        let err = r.write(ptr, &[1, 2, 3, 4], S).unwrap_err();
        assert!(matches!(err, StorageError::Unsupported { .. }), "{err}");
    }
    r.deallocate(ptr, size, S).unwrap();
}

fn a_petabyte_request_fails_typed_and_leaves_the_resource_usable<R: DeviceResource>(r: &R) {
    let before = r.mem_info().unwrap();
    match r.allocate(PIB, S) {
        Err(StorageError::OutOfMemory { requested, .. })
        | Err(StorageError::TooBig { requested, .. }) => {
            assert_eq!(requested, PIB)
        }
        other => panic!("a 1 PiB request must fail with OutOfMemory or TooBig, got {other:?}"),
    }
    assert_eq!(r.mem_info().unwrap().total, before.total);
    let ptr = r
        .allocate(4096, S)
        .expect("the resource still allocates after a refusal");
    r.deallocate(ptr, 4096, S).unwrap();
}

fn random_sizes_are_aligned_disjoint_and_hold_their_bytes<R: DeviceResource>(
    r: &R,
    n: usize,
    seed: u64,
) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut live: Vec<(DevicePtr, u64)> = Vec::new();
    for i in 0..n {
        let size = rng.random_range(0..=256 << 10);
        let ptr = r
            .allocate(size, S)
            .unwrap_or_else(|e| panic!("allocation {i} of {size} bytes: {e}"));
        assert_aligned(r, ptr);
        if r.holds_memory() {
            r.write(ptr, &pattern(i as u64, size as usize), S).unwrap();
        }
        live.push((ptr, size));
    }
    let mut sorted = live.clone();
    sorted.sort();
    for pair in sorted.windows(2) {
        let ((a, a_size), (b, _)) = (pair[0], pair[1]);
        assert!(
            a.0 + a_size.max(1) <= b.0,
            "allocations at {a} (+{a_size}) and {b} overlap"
        );
    }
    for (i, &(ptr, size)) in live.iter().enumerate() {
        if r.holds_memory() {
            let mut back = vec![0u8; size as usize];
            r.read(ptr, &mut back, S).unwrap();
            assert!(
                back == pattern(i as u64, size as usize),
                "allocation {i} at {ptr} lost its bytes"
            );
        }
        r.deallocate(ptr, size, S).unwrap();
    }
}

fn random_mixed_allocate_free_ends_with_everything_given_back<R: DeviceResource>(
    r: &R,
    ops: usize,
    seed: u64,
) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut live: Vec<(DevicePtr, u64, u64)> = Vec::new();
    for op in 0..ops as u64 {
        if live.is_empty() || rng.random_range(0..100) < 60 {
            let size = rng.random_range(0..=64 << 10);
            let ptr = r.allocate(size, S).unwrap();
            assert_aligned(r, ptr);
            if r.holds_memory() && size >= 8 {
                r.write(ptr, &op.to_le_bytes(), S).unwrap();
            }
            live.push((ptr, size, op));
        } else {
            let (ptr, size, tag) = live.swap_remove(rng.random_range(0..live.len()));
            if r.holds_memory() && size >= 8 {
                let mut back = [0u8; 8];
                r.read(ptr, &mut back, S).unwrap();
                assert_eq!(
                    u64::from_le_bytes(back),
                    tag,
                    "allocation {tag} was overwritten"
                );
            }
            r.deallocate(ptr, size, S).unwrap();
        }
    }
    for (ptr, size, _) in live.drain(..) {
        r.deallocate(ptr, size, S).unwrap();
    }
}

fn out_of_bounds_and_unknown_pointers_are_rejected<R: DeviceResource>(r: &R) {
    let ptr = r.allocate(1024, S).unwrap();
    let unknown =
        |e: StorageError| assert!(matches!(e, StorageError::UnknownPointer { .. }), "{e}");
    if r.holds_memory() {
        unknown(r.write(DevicePtr(ptr.0 + 1000), &[0; 25], S).unwrap_err());
        unknown(r.read(DevicePtr(ptr.0 + 1024), &mut [0; 1], S).unwrap_err());
    }
    unknown(r.fill(ptr, 0, 1025, S).unwrap_err());
    unknown(r.copy(ptr, DevicePtr(ptr.0 + 512), 513, S).unwrap_err());
    unknown(r.fill(DevicePtr(u64::MAX - 8), 0, 16, S).unwrap_err());
    unknown(r.deallocate(DevicePtr(ptr.0 + 256), 768, S).unwrap_err());
    unknown(r.deallocate(ptr, 1000, S).unwrap_err());
    r.deallocate(ptr, 1024, S).unwrap();
    unknown(r.deallocate(ptr, 1024, S).unwrap_err());
    unknown(r.fill(ptr, 0, 1, S).unwrap_err());
}

fn fill_and_copy_move_the_right_bytes<R: DeviceResource>(r: &R) {
    let a = r.allocate(4096, S).unwrap();
    let b = r.allocate(4096, S).unwrap();
    r.fill(a, 0xAB, 4096, S).unwrap();
    r.copy(a, DevicePtr(b.0 + 1024), 2048, S).unwrap();
    r.synchronize(S).unwrap();
    if r.holds_memory() {
        let mut back = vec![0u8; 4096];
        r.read(b, &mut back, S).unwrap();
        assert!(
            back[1024..3072].iter().all(|&x| x == 0xAB),
            "copied bytes are wrong"
        );
        r.fill(b, 0x11, 1024, S).unwrap();
        r.read(b, &mut back, S).unwrap();
        assert!(back[..1024].iter().all(|&x| x == 0x11));
        assert!(
            back[1024..3072].iter().all(|&x| x == 0xAB),
            "a fill ran past its range"
        );
    }
    r.deallocate(a, 4096, S).unwrap();
    r.deallocate(b, 4096, S).unwrap();
}

fn concurrent_users_never_see_each_others_bytes<R: DeviceResource>(r: &R) {
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            scope.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(100 + t);
                let mut live: Vec<(DevicePtr, u64, u64)> = Vec::new();
                for op in 0..150u64 {
                    let tag = t << 32 | op;
                    if live.is_empty() || rng.random_range(0..100) < 55 {
                        let size = 8 + rng.random_range(0..=16 << 10);
                        let ptr = r.allocate(size, S).unwrap();
                        if r.holds_memory() {
                            r.write(ptr, &pattern(tag, size as usize), S).unwrap();
                        }
                        live.push((ptr, size, tag));
                    } else {
                        let at = rng.random_range(0..live.len());
                        let (ptr, size, tag) = live.swap_remove(at);
                        if r.holds_memory() {
                            let mut back = vec![0u8; size as usize];
                            r.read(ptr, &mut back, S).unwrap();
                            assert!(
                                back == pattern(tag, size as usize),
                                "thread {t}: allocation {tag:#x} was overwritten"
                            );
                        }
                        r.deallocate(ptr, size, S).unwrap();
                    }
                }
                for (ptr, size, _) in live {
                    r.deallocate(ptr, size, S).unwrap();
                }
            });
        }
    });
}
