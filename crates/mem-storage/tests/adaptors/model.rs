//! Property test: random allocate/free programs against a model.
//!
//! The model is a map of live allocations. After every step: success is
//! exactly "fits in what is free" on the capacity-limited backends, live
//! allocations never overlap and are aligned, the statistics adaptor and the
//! tracking adaptor agree with the model, and `mem_info` reports the
//! model's free bytes.

use std::collections::BTreeMap;

use mem_storage::{
    DevicePtr, DeviceResource, HostResource, SimulatedResource, StatsResource, StorageError,
    StreamId, TrackingResource,
};
use proptest::prelude::*;

const CAPACITY: u64 = 1 << 20;

#[derive(Debug, Clone)]
enum Op {
    Allocate(u64),
    /// Free the live allocation at this index (modulo the live count).
    Free(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u64..=CAPACITY / 4).prop_map(Op::Allocate),
        1 => (CAPACITY / 4..=CAPACITY + 1).prop_map(Op::Allocate),
        3 => any::<usize>().prop_map(Op::Free),
    ]
}

fn run_program<R: DeviceResource>(base: R, ops: &[Op]) -> Result<(), TestCaseError> {
    let r = StatsResource::new(TrackingResource::new(base));
    let mut live: BTreeMap<u64, u64> = BTreeMap::new();
    let mut used = 0u64;
    for op in ops {
        match *op {
            Op::Allocate(bytes) => match r.allocate(bytes, StreamId(0)) {
                Ok(ptr) => {
                    prop_assert!(
                        used + bytes <= CAPACITY,
                        "{bytes} bytes accepted with {used} used"
                    );
                    prop_assert_eq!(ptr.0 % r.alignment(), 0);
                    if let Some((&prev, &len)) = live.range(..=ptr.0).next_back() {
                        prop_assert!(
                            prev + len.max(1) <= ptr.0,
                            "overlaps the allocation at {:#x}",
                            prev
                        );
                    }
                    if let Some((&next, _)) = live.range(ptr.0 + 1..).next() {
                        prop_assert!(
                            ptr.0 + bytes.max(1) <= next,
                            "overlaps the allocation at {:#x}",
                            next
                        );
                    }
                    live.insert(ptr.0, bytes);
                    used += bytes;
                }
                Err(StorageError::OutOfMemory { free, .. }) => {
                    prop_assert!(
                        used + bytes > CAPACITY,
                        "{bytes} bytes refused with {used} used"
                    );
                    prop_assert_eq!(free, CAPACITY - used);
                }
                Err(StorageError::TooBig { .. }) => prop_assert!(bytes > CAPACITY),
                Err(other) => return Err(TestCaseError::fail(format!("unexpected error {other}"))),
            },
            Op::Free(index) => {
                if live.is_empty() {
                    continue;
                }
                let (&ptr, &bytes) = live
                    .iter()
                    .nth(index % live.len())
                    .expect("index is in range");
                r.deallocate(DevicePtr(ptr), bytes, StreamId(0))
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                live.remove(&ptr);
                used -= bytes;
            }
        }
        let stats = r.stats();
        prop_assert_eq!(stats.current_bytes, used);
        prop_assert_eq!(stats.current_count, live.len() as u64);
        prop_assert_eq!(r.inner().outstanding_bytes(), used);
        prop_assert_eq!(r.mem_info().unwrap().free, CAPACITY - used);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_simulated_device_refuses_exactly_when_full(ops in prop::collection::vec(op(), 1..120)) {
        run_program(SimulatedResource::new(CAPACITY), &ops)?;
    }

    #[test]
    fn a_capacity_limited_host_device_refuses_exactly_when_full(ops in prop::collection::vec(op(), 1..120)) {
        run_program(HostResource::with_capacity(CAPACITY), &ops)?;
    }
}
