//! The inputs every command shares: where the events come from (a trace
//! file or a built-in workload), the device size, the backend and its pool
//! settings, and the base configuration `--config` applies over.

mod backends;
mod config_arg;
mod load;

use std::path::PathBuf;

use clap::{Args, ValueEnum};

pub use backends::{HOST_MEMORY_SHARE, PoolSettings, host_capacity, replay_on};
pub use config_arg::{CONFIG_SYNTAX, base_config, load_config};
pub use load::{InputNote, NoteLevel, input_notes, load_input};
pub(crate) use load::{warn_about, write_notes};

use crate::error::{CliError, Result};
use crate::trace::TraceFormat;
use crate::workload::Workload;

/// Default simulated device size in GiB (an 80 GiB data-center GPU).
pub const DEFAULT_DEVICE_GIB: u64 = 80;
/// Largest `--device-gib` accepted (1 PiB).
pub const MAX_DEVICE_GIB: u64 = 1 << 20;

/// Where the events come from: a trace file or a built-in workload.
#[derive(Debug, Clone, Args)]
#[group(required = true, multiple = false)]
pub struct Source {
    /// Trace file (gpumem JSONL, RMM CSV, or PyTorch snapshot pickle), plain or gzip-compressed (`.gz`).
    pub trace: Option<PathBuf>,
    /// Built-in workload instead of a file.
    #[arg(long, value_enum)]
    pub workload: Option<Workload>,
}

/// Options shared by commands that read events.
#[derive(Debug, Clone, Args)]
pub struct InputArgs {
    /// Trace file or workload.
    #[command(flatten)]
    pub source: Source,
    /// Trace file format.
    #[arg(long, value_enum, default_value = "auto")]
    pub format: TraceFormat,
    /// Seed of a built-in workload.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Length multiplier of a built-in workload (1.0 = default op count).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Device of a multi-GPU PyTorch snapshot to replay (required when
    /// more than one device allocated; the error lists them).
    #[arg(long, value_name = "N")]
    pub device: Option<usize>,
}

/// Allocator to replay against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
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
        return Err(CliError::InvalidArgument {
            option: "--device-gib",
            value: gib.to_string(),
            reason: format!(
                "must be a size in GiB above 0 and at most {MAX_DEVICE_GIB} (fractions such as 23.5 are fine)"
            ),
        });
    }
    Ok(bytes as u64)
}
