//! `MemoryManagementOptions`, with the API of CubeCL's (whose fields are
//! private, so the adapter cannot read them from CubeCL's type).

use cubecl_server::config::memory::PersistentMemory;
use cubecl_server::memory_management::MemoryAllocationMode;

/// The options for creating a [`MemoryManagement`](crate::MemoryManagement):
/// the same two calls as `cubecl_server::memory_management::MemoryManagementOptions`.
#[derive(Debug, Clone)]
pub struct MemoryManagementOptions {
    pub(crate) name: String,
    pub(crate) mode: Option<MemoryAllocationMode>,
}

impl MemoryManagementOptions {
    /// Options named `name`, the mode taken from CubeCL's runtime config.
    pub fn new<S: Into<String>>(name: S) -> Self {
        Self {
            name: name.into(),
            mode: None,
        }
    }

    /// Forces the [`MemoryAllocationMode`] during execution to always be the
    /// provided one.
    pub fn mode(mut self, mode: MemoryAllocationMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// The mode in force when no window is open, as CubeCL decides it: the
    /// provided one, else `Persistent` only under an enforced persistent
    /// memory config.
    pub(crate) fn base_mode(&self, config: &PersistentMemory) -> MemoryAllocationMode {
        match (self.mode, config) {
            (Some(mode), _) => mode,
            (None, PersistentMemory::Enforced) => MemoryAllocationMode::Persistent,
            (None, _) => MemoryAllocationMode::Auto,
        }
    }
}
