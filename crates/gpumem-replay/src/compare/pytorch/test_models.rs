//! The models the policy tests drive: an allocator under a policy on a
//! device of a given capacity, priced with the A100 table.

use gpumem::storage::DriverCosts;

use super::{CachingAllocator, Policy};

/// The model under `policy` on a device of `capacity` bytes.
pub(super) fn model(policy: Policy, capacity: u64) -> CachingAllocator {
    CachingAllocator::new(policy, capacity, DriverCosts::A100)
}

/// PyTorch's defaults with `expandable_segments:True`.
pub(super) fn expandable() -> Policy {
    Policy {
        expandable: true,
        ..Policy::default()
    }
}
