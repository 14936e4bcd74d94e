//! `gpumem compare`'s arguments. They live with the command, not in
//! `cli/`, so the front end only registers the subcommand.

use clap::Args;
use gpumem_replay::compare::CompareBackend;
use gpumem_replay::setup::DEFAULT_DEVICE_GIB;

use crate::input::InputArgs;

/// `gpumem compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Events to replay through every allocator.
    #[command(flatten)]
    pub input: InputArgs,
    /// Allocators to compare, comma-separated, in the order to print them:
    /// gpumem (Device defaults), sub_slices, exclusive, sliced (Device on
    /// that paged layout), offset-allocator, pytorch (a model of PyTorch's
    /// CUDA caching allocator, PyTorch's defaults or --pytorch-conf: 512 B rounding,
    /// 2 MiB small and 20 MiB large segments, best fit per stream, cached
    /// segments released and the request retried when the device is
    /// full), pytorch-expandable (the same with expandable_segments:True:
    /// one segment per stream and pool grown by 2 MiB or 20 MiB pages),
    /// system. Default: all.
    #[arg(long, value_name = "LIST")]
    pub against: Option<String>,
    /// Device of gpumem's rows.
    #[arg(long, value_enum, default_value = "sim")]
    pub backend: CompareBackend,
    /// Device size in GiB (fractions such as 23.5 are accepted): gpumem's
    /// device, offset-allocator's heap and the system baseline's capacity.
    #[arg(long, default_value_t = DEFAULT_DEVICE_GIB as f64, allow_negative_numbers = true)]
    pub device_gib: f64,
    /// Replay a trace with several streams with one thread per stream on
    /// gpumem's rows, all at once through one device (the other rows and
    /// one-stream traces replay in trace order as without it).
    #[arg(long)]
    pub threads: bool,
    /// Replay every row with a driver model once more under each split of
    /// the A100 table (a100, a100-per-call, a100-per-byte) and print its
    /// driver ns/op under each, and per half of the ops.
    #[arg(long)]
    pub splits: bool,
    /// Also sweep gpumem's arena knobs (arena_idle_share 1/4 to 1/32 and
    /// never, times arena_max_chunk 16 to 256 MiB: 35 points), replay
    /// each point under the three splits, and print what each holds and
    /// pays against the pytorch and pytorch-expandable rows: whether any
    /// setting beats both on memory and driver time under every split,
    /// and which points are on the memory/driver-time frontier. Every
    /// other GPUMEM_CONF setting is kept.
    #[arg(long)]
    pub frontier: bool,
    /// PYTORCH_CUDA_ALLOC_CONF settings for the pytorch rows, in PyTorch's
    /// syntax: max_split_size_mb:N (above 20), roundup_power2_divisions:N
    /// (a power of two), comma-separated. Default: PyTorch's defaults.
    #[arg(long, value_name = "CONF")]
    pub pytorch_conf: Option<String>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Exit 0 even when allocators refused allocations. Without it the
    /// table is printed, then one line naming who failed, and the exit
    /// status is 1.
    #[arg(long)]
    pub allow_failures: bool,
}
