//! Building the backend `--backend` names and replaying on it.
//!
//! Each arm calls the generic replay loop with a concrete backend type, so
//! the timed loop is monomorphized per backend (no dynamic dispatch).

use mem_pools::MemoryConfiguration;
use mem_storage::{CudaResource, DeviceResource, HostResource, SimulatedResource};

use super::BackendKind;
use crate::error::{CliError, Result};
use crate::replay::{PoolBackend, Program, ReplayOptions, ReplayRun, SystemBackend, replay};

/// Replays `program` on the backend `kind` names, a device of `capacity`
/// bytes (CUDA uses the real device's size instead).
pub fn replay_on(
    kind: BackendKind,
    capacity: u64,
    source: &str,
    program: &Program,
    options: &ReplayOptions,
) -> Result<ReplayRun> {
    let config = MemoryConfiguration::SubSlices;
    match kind {
        BackendKind::System => replay(source, program, &mut SystemBackend::new(capacity), options),
        BackendKind::Sim => {
            let resource = SimulatedResource::new(capacity);
            let mut backend = PoolBackend::new("sim", resource, capacity, config, false, false);
            replay(source, program, &mut backend, options)
        }
        BackendKind::Host => {
            let resource = HostResource::with_capacity(capacity);
            let mut backend = PoolBackend::new("host", resource, capacity, config, false, true);
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
            let mut backend = PoolBackend::new("cuda", resource, total, config, false, false);
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
