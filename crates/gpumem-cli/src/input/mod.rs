//! The inputs every command shares: where the events come from (a trace
//! file or a built-in workload). The device size, the backend, its pool
//! settings and the base configuration are `gpumem_replay::setup`'s.

mod load;

use std::path::PathBuf;

use clap::Args;
use gpumem_replay::trace::TraceFormat;
use gpumem_replay::workload::Workload;

pub use load::load_input;
pub(crate) use load::{warn_about, write_notes};

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
