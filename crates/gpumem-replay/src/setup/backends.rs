//! Building the backend `--backend` names and replaying on it.
//!
//! gpumem's backends are a `gpumem::Device` built with `DeviceBuilder` as a
//! program builds one: the simulated, host or CUDA device, the facade's
//! defaults (`pools:auto`: arenas where the backend has virtual memory;
//! pages of at most `min(1 GiB, device)`) with what `--config` and
//! `GPUMEM_CONF` change, and one stream per trace stream. Each arm calls
//! the generic replay loop with a concrete backend type, so the timed loop
//! is monomorphized per backend (no dynamic dispatch).

use gpumem::Device;
use gpumem::config::GpumemConfig;
use gpumem::device::DeviceBuilder;

use super::BackendKind;
use crate::error::{ReplayError, Result};
use crate::replay::{
    DeviceBackend, MAX_STREAMS, Program, ReplayOptions, ReplayRun, StreamMode, SystemBackend,
    device_streams, replay,
};

/// How the gpumem backends (`sim`, `host`, `cuda`) are set up; the `system`
/// baseline ignores it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PoolSettings {
    /// The device's configuration: the facade's defaults with `GPUMEM_CONF`
    /// and `--config` applied (see `load_config`). Its stream count is
    /// replaced by the trace's.
    pub config: GpumemConfig,
    /// Relocate as a runtime would (`--relocate`).
    pub relocate: bool,
    /// Trace streams to device streams (`--streams`).
    pub streams: StreamMode,
}

impl PoolSettings {
    /// The device `builder` makes with these settings, with a stream per
    /// trace stream of `program`, as a replay backend named `name`.
    ///
    /// # Errors
    /// More trace streams than a device has ([`MAX_STREAMS`]), or the
    /// facade refusing the configuration (e.g. arenas on a backend without
    /// virtual memory), named for the backend.
    pub fn device(
        &self,
        name: &'static str,
        builder: DeviceBuilder,
        program: &Program,
    ) -> Result<DeviceBackend> {
        let streams = device_streams(self.streams, program.streams.len());
        if streams > MAX_STREAMS {
            return Err(ReplayError::Backend {
                backend: name,
                message: format!(
                    "the trace uses {streams} streams and a gpumem::Device has at most \
                     {MAX_STREAMS}; replay with `--streams one`"
                ),
            });
        }
        let mut config = self.config.clone();
        config.streams = streams;
        let device =
            builder
                .config(config)
                .ignore_env()
                .build()
                .map_err(|e| ReplayError::Backend {
                    backend: name,
                    message: format!("building the device: {e}"),
                })?;
        Ok(DeviceBackend::new(name, device).with_relocation(self.relocate))
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
    let builder = match kind {
        BackendKind::System => {
            return replay(source, program, &mut SystemBackend::new(capacity), options);
        }
        BackendKind::Sim => Device::simulated(capacity),
        BackendKind::Host => Device::host_with_capacity(capacity),
        BackendKind::Cuda => {
            if !gpumem::storage::cuda_available() {
                return Err(ReplayError::CudaUnavailable);
            }
            Device::cuda(0).map_err(|e| ReplayError::Backend {
                backend: "cuda",
                message: format!("opening device 0: {e}"),
            })?
        }
    };
    let name = match kind {
        BackendKind::Host => "host",
        BackendKind::Cuda => "cuda",
        _ => "sim",
    };
    let mut backend = settings
        .device(name, builder, program)?
        .with_patterns(kind == BackendKind::Host);
    replay(source, program, &mut backend, options)
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
