//! `gpumem plan`'s arguments.

use clap::Args;

use gpumem_replay::setup::DEFAULT_DEVICE_GIB;

use crate::input::InputArgs;

/// `gpumem plan`.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// Events to measure.
    #[command(flatten)]
    pub input: InputArgs,
    /// Simulated device size in GiB (fractions such as 23.5 are accepted).
    #[arg(long, default_value_t = DEFAULT_DEVICE_GIB as f64, allow_negative_numbers = true)]
    pub device_gib: f64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}
