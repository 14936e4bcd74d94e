//! `MemoryManagementOptions`, with the API of CubeCL's (whose fields are
//! private, so the adapter cannot read them from CubeCL's type).

use std::path::PathBuf;

use cubecl_server::config::memory::PersistentMemory;
use cubecl_server::memory_management::MemoryAllocationMode;

/// The options for creating a [`MemoryManagement`](crate::MemoryManagement):
/// the same two calls as `cubecl_server::memory_management::MemoryManagementOptions`.
#[derive(Debug, Clone)]
pub struct MemoryManagementOptions {
    pub(crate) name: String,
    pub(crate) mode: Option<MemoryAllocationMode>,
    pub(crate) trace: Option<PathBuf>,
}

impl MemoryManagementOptions {
    /// Options named `name`, the mode taken from CubeCL's runtime config.
    pub fn new<S: Into<String>>(name: S) -> Self {
        Self {
            name: name.into(),
            mode: None,
            trace: None,
        }
    }

    /// Forces the [`MemoryAllocationMode`] during execution to always be the
    /// provided one.
    pub fn mode(mut self, mode: MemoryAllocationMode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Record this manager's allocations as a gpumem trace in `path` (not
    /// in CubeCL's options; `GPUMEM_TRACE=path` does the same for every
    /// manager built without this call). Managers tracing to one path share
    /// the file, each as its own stream (docs/cubecl.md, "Recording a trace").
    pub fn trace<P: Into<PathBuf>>(mut self, path: P) -> Self {
        self.trace = Some(path.into());
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
