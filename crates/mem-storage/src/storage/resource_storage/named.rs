//! The ready-made storages: host pages and simulated pages.

use super::ResourceStorage;

/// The embedded default storage: pages of real host memory.
pub type HostStorage = ResourceStorage<crate::host::HostResource>;

impl HostStorage {
    /// Host pages, as large as this machine's memory allows.
    pub fn host() -> Self {
        Self::new(crate::host::HostResource::new())
    }
}

/// Pages on a simulated device: addresses and accounting, no bytes.
pub type SimulatedStorage = ResourceStorage<crate::simulated::SimulatedResource>;

impl SimulatedStorage {
    /// Pages from a simulated device of `capacity` bytes.
    pub fn simulated(capacity: u64) -> Self {
        Self::new(crate::simulated::SimulatedResource::new(capacity))
    }
}
