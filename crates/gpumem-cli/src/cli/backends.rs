//! Building the backend `--backend` names and replaying on it.
//!
//! Each arm calls the generic replay loop with a concrete backend type, so
//! the timed loop is monomorphized per backend (no dynamic dispatch).

use std::sync::Arc;

use mem_pools::MemoryConfiguration;
use mem_storage::{
    CudaResource, CudaVirtualMemory, DeviceResource, HostResource, HostVirtualMemory,
    SimulatedResource, SimulatedVirtualMemory, StorageError, VirtualMemory,
};

use super::BackendKind;
use crate::error::{CliError, Result};
use crate::layout::uses_arenas;
use crate::replay::{
    PoolBackend, Program, ReplayOptions, ReplayRun, StreamMode, SystemBackend, replay,
};

/// How the pool backends (`sim`, `host`, `cuda`) are set up; the `system`
/// baseline ignores it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolSettings {
    /// Pool layout (`--config`).
    pub config: MemoryConfiguration,
    /// Relocate as a runtime would (`--relocate`).
    pub relocate: bool,
    /// Trace streams to memories (`--streams`).
    pub streams: StreamMode,
}

impl PoolSettings {
    /// The pool backend over `resource`; with an arena layout, over `vm`
    /// too (`vm` builds the backend's virtual memory for `capacity` bytes).
    fn backend<R: DeviceResource>(
        &self,
        name: &'static str,
        resource: R,
        capacity: u64,
        check_patterns: bool,
        vm: impl FnOnce(u64) -> Result<Arc<dyn VirtualMemory>>,
    ) -> Result<PoolBackend<R>> {
        let backend = PoolBackend::new(
            name,
            resource,
            capacity,
            self.config.clone(),
            false,
            check_patterns,
        );
        let backend = match uses_arenas(&self.config) {
            true => backend.with_virtual_memory(vm(capacity)?),
            false => backend,
        };
        Ok(backend
            .with_relocation(self.relocate)
            .with_streams(self.streams))
    }
}

fn no_virtual_memory(backend: &'static str) -> impl Fn(StorageError) -> CliError {
    move |e| CliError::Backend {
        backend,
        message: format!(
            "arena pools need virtual memory, which this device lacks ({e}); \
             replay with `--config sub-slices`"
        ),
    }
}

/// Replays `program` on the backend `kind` names, a device of `capacity`
/// bytes (CUDA uses the real device's size instead), set up by `settings`.
pub fn replay_on(
    kind: BackendKind,
    capacity: u64,
    settings: &PoolSettings,
    source: &str,
    program: &Program,
    options: &ReplayOptions,
) -> Result<ReplayRun> {
    match kind {
        BackendKind::System => replay(source, program, &mut SystemBackend::new(capacity), options),
        BackendKind::Sim => {
            let resource = SimulatedResource::new(capacity);
            let mut backend = settings.backend("sim", resource, capacity, false, |c| {
                Ok(Arc::new(SimulatedVirtualMemory::new(c)))
            })?;
            replay(source, program, &mut backend, options)
        }
        BackendKind::Host => {
            let resource = HostResource::with_capacity(capacity);
            let mut backend = settings.backend("host", resource, capacity, true, |c| {
                HostVirtualMemory::with_capacity(c)
                    .map(|vm| Arc::new(vm) as Arc<dyn VirtualMemory>)
                    .map_err(no_virtual_memory("host"))
            })?;
            replay(source, program, &mut backend, options)
        }
        BackendKind::Cuda => {
            let resource = open_cuda()?;
            let total = resource
                .mem_info()
                .map_err(|e| CliError::Backend {
                    backend: "cuda",
                    message: format!("reading the device's memory size: {e}"),
                })?
                .total;
            let context = resource.context().clone();
            let mut backend = settings.backend("cuda", resource, total, false, |_| {
                CudaVirtualMemory::from_context(context)
                    .map(|vm| Arc::new(vm) as Arc<dyn VirtualMemory>)
                    .map_err(no_virtual_memory("cuda"))
            })?;
            replay(source, program, &mut backend, options)
        }
    }
}

/// Device 0 through the CUDA driver, after checking the driver library loads
/// (a missing libcuda would otherwise abort the process on first use).
fn open_cuda() -> Result<CudaResource> {
    if !mem_storage::cuda_available() {
        return Err(CliError::CudaUnavailable);
    }
    CudaResource::new(0).map_err(|e| CliError::Backend {
        backend: "cuda",
        message: format!("opening device 0: {e}"),
    })
}

/// The share of this machine's available memory the host backend may hold.
pub const HOST_MEMORY_SHARE: f64 = 0.5;

/// Caps a host-backend device size to half of the memory this machine has
/// available (`MemAvailable`), because the host backend holds real, zeroed
/// memory: an 80 GiB trace must fail allocations (counted in the report), not
/// push the machine into swap or the out-of-memory killer. Returns the
/// capacity to use and whether it was capped.
pub fn host_capacity(requested: u64) -> (u64, bool) {
    match available_memory() {
        Some(available) => {
            let limit = (available as f64 * HOST_MEMORY_SHARE) as u64;
            (requested.min(limit), requested > limit)
        }
        None => (requested, false),
    }
}

fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_host_device_is_kept_and_an_absurd_one_is_capped() {
        assert_eq!(host_capacity(4096), (4096, false));
        if available_memory().is_none() {
            println!("skipping: /proc/meminfo has no MemAvailable here");
            return;
        }
        let (capacity, capped) = host_capacity(u64::MAX);
        assert!(capped);
        assert!(capacity < u64::MAX / 2);
    }
}
