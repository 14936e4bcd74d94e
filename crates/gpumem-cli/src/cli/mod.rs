//! The command line: `gpumem replay`, `gpumem record`, `gpumem plan`,
//! `gpumem compare` (its arguments live in [`crate::compare`]).
//!
//! Argument structs are clap-derived; [`run`] executes a parsed command and
//! writes results to the given streams so tests can run it in-process.

mod commands;
mod replay_views;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use crate::input::{InputArgs, Source, load_input};
pub use crate::plan::PlanArgs;
pub use commands::run;

use gpumem_replay::replay::StreamMode;
use gpumem_replay::setup::{BackendKind, DEFAULT_DEVICE_GIB};
use gpumem_replay::trace::GroupBy;
use gpumem_replay::workload::Workload;

/// gpumem: replay GPU allocation traces through gpumem::Device and report
/// peak, fragmentation and time per op.
#[derive(Debug, Parser)]
#[command(name = "gpumem", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay a trace or built-in workload and print a report.
    Replay(ReplayArgs),
    /// Write a built-in workload as a JSON Lines trace.
    Record(RecordArgs),
    /// Dry-run a trace and suggest a pool layout sized to its high-water marks.
    Plan(PlanArgs),
    /// Replay one trace through several allocators and print one table.
    Compare(crate::compare::CompareArgs),
}

/// `gpumem replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    /// Events to replay.
    #[command(flatten)]
    pub input: InputArgs,
    /// Allocator to replay against.
    #[arg(long, value_enum, default_value = "sim")]
    pub backend: BackendKind,
    /// Device size in GiB for the sim, host and system backends (fractions
    /// such as 23.5 are accepted).
    #[arg(long, default_value_t = DEFAULT_DEVICE_GIB as f64, allow_negative_numbers = true)]
    pub device_gib: f64,
    /// Print one JSON object instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// Write an SVG timeline of live vs reserved bytes.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Pool layout, in the grammar of `GPUMEM_CONF=pools:…`: `auto` (the
    /// default, as for `gpumem::Device`: arenas where the backend has
    /// virtual memory), `arenas`, `sub_slices`, `exclusive`, `sliced`, a
    /// list such as `sliced:8MiB/64KiB,sliced:512MiB/5GiB,exclusive:20GiB`
    /// or `arena:1MiB,arena:64GiB`; or GPUMEM_CONF items
    /// (`pools:sub_slices,max_page:20GiB`); or a file holding one (`gpumem
    /// plan --json` output works). Applied over GPUMEM_CONF.
    #[arg(long, value_name = "LAYOUT")]
    pub config: Option<String>,
    /// Relocate as a runtime would: before reservations when the device
    /// runs short or pools run out of page sizes, and a reclaim at every
    /// cleanup event and at the end (final reserved is after it).
    #[arg(long)]
    pub relocate: bool,
    /// Trace streams to device streams: `per-trace` gives each its own
    /// `gpumem::Stream` (as CUDA runtimes keep one pool memory per
    /// stream), `one` serves all from one.
    #[arg(long, value_enum, default_value = "per-trace")]
    pub streams: StreamMode,
    /// Exit 0 even when the backend refused allocations (a trace larger
    /// than the device replayed on purpose). Without it such a replay
    /// prints its report, then a one-line summary, and exits 1.
    #[arg(long)]
    pub allow_failures: bool,
    /// Write one self-contained HTML page: a zoomable timeline, per-pool
    /// bands, and the allocations live at any point you click.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// What the x axis of `--plot` and `--html` counts: `ops`, or `time`
    /// (the trace's `time_us`; ops when it has none).
    #[arg(long = "x", value_enum, default_value = "ops")]
    pub x_axis: XAxisArg,
    /// Origins (tags or frames) listed live at peak live and at peak
    /// reserved; 0 leaves attribution out.
    #[arg(long, default_value_t = gpumem_replay::attribution::DEFAULT_TOP)]
    pub top: usize,
    /// What an origin taken from a stack names: its frame's `line` (the
    /// call site), `function`, `file`, or `module` (the file as a Python
    /// module). Tags stay as written.
    #[arg(long, value_enum, default_value = "line")]
    pub group_by: GroupBy,
}

/// `--x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum XAxisArg {
    /// Operation index.
    Ops,
    /// The trace's timestamps (µs).
    Time,
}

/// `gpumem record`.
#[derive(Debug, Clone, Args)]
pub struct RecordArgs {
    /// Workload to write.
    #[arg(long, value_enum)]
    pub workload: Workload,
    /// Output trace file (JSON Lines); `-` writes to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// Seed of the workload.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Length multiplier (1.0 = default op count).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
}
