use super::*;

#[test]
fn the_sweep_doubles_from_one_slot_to_64_gib() {
    let sizes: Vec<u64> = sweep_sizes().collect();
    assert_eq!(sizes.len(), 16);
    assert_eq!(sizes.first(), Some(&SMALLEST));
    assert_eq!(sizes.last(), Some(&LARGEST));
    assert!(sizes.windows(2).all(|w| w[1] == 2 * w[0]));
}

#[test]
fn pairs_after_the_first_reservation_call_no_driver_at_any_size() {
    for size in [SMALLEST, 1 << 30, LARGEST] {
        let sweep = SizeSweep::new(size).expect("the sweep's device and first reservation");
        assert_eq!(sweep.size(), size);
        sweep.pairs(1).expect("a pair settles");
        let calls = storage_calls(sweep.device());
        let reserved = sweep.device().stats().reserved_bytes.current;
        assert!(
            reserved >= size,
            "the slice's chunks stay mapped: {reserved} < {size}"
        );
        sweep.pairs(5).expect("five pairs");
        assert_eq!(storage_calls(sweep.device()), calls, "{size} bytes");
        assert_eq!(sweep.device().stats().reserved_bytes.current, reserved);
    }
}

#[test]
fn a_freed_slice_leaves_only_the_neighbours_live() {
    let sweep = SizeSweep::new(8 * SMALLEST).expect("the sweep's device");
    sweep.pairs(3).expect("three pairs");
    sweep.device().drain();
    assert_eq!(
        sweep.device().stats().allocated_bytes.current,
        2 * NEIGHBOUR
    );
}
