//! What a replay runs on: the backend, the device size and its pool
//! settings, and the base configuration `--config` applies over.
//!
//! The command's inputs (a trace file or a built-in workload) are the
//! command's; this is what is left once they are read.

mod backends;
mod config_arg;

pub use backends::{HOST_MEMORY_SHARE, PoolSettings, host_capacity, replay_on};
pub use config_arg::{CONFIG_SYNTAX, base_config, load_config};

use crate::error::{ReplayError, Result};

/// Default simulated device size in GiB (an 80 GiB data-center GPU).
pub const DEFAULT_DEVICE_GIB: u64 = 80;
/// Largest `--device-gib` accepted (1 PiB).
pub const MAX_DEVICE_GIB: u64 = 1 << 20;

/// Allocator to replay against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum BackendKind {
    /// `gpumem::Device::simulated`: a device that holds no memory.
    Sim,
    /// `gpumem::Device::host_with_capacity`: real host memory; every allocation is pattern-checked.
    Host,
    /// `gpumem::Device::cuda(0)`: a CUDA device.
    Cuda,
    /// Baseline: one device allocation per request, freed at once (reserved = live).
    System,
}

/// Device bytes for `--device-gib` (GiB, fractions allowed; rounded to
/// whole bytes), refusing 0, negative, non-finite and absurd sizes.
pub fn device_bytes(gib: f64) -> Result<u64> {
    let bytes = (gib * (1u64 << 30) as f64).round();
    if !gib.is_finite() || gib > MAX_DEVICE_GIB as f64 || bytes < 1.0 {
        return Err(ReplayError::InvalidArgument {
            option: "--device-gib",
            value: gib.to_string(),
            reason: format!(
                "must be a size in GiB above 0 and at most {MAX_DEVICE_GIB} (fractions such as 23.5 are fine)"
            ),
        });
    }
    Ok(bytes as u64)
}
