//! Built-in workloads: seeded, deterministic generators of realistic traces,
//! so a replay needs no file.
//!
//! Each generator draws from a [`rand::rngs::SmallRng`] seeded with the given
//! seed, so the same `(workload, seed, scale)` always yields the same events.
//! Sizes are realistic (tens of GiB at peak for `training` and `serving`; the
//! replay's simulated device defaults to 80 GiB); op counts are modest by
//! default (tens of thousands) and grow linearly with `scale`.

mod devlog;
mod growth;
mod live;
mod random;
mod recorder;
mod serving;
mod span;
mod training;

pub use live::LIVE_SLICES;

use crate::error::{ReplayError, Result};
use crate::trace::{Event, Trace};

/// Largest accepted `scale`: keeps a typo from generating billions of ops.
pub const MAX_SCALE: f64 = 1000.0;

/// One of the built-in workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Workload {
    /// RMM random-allocations shape: allocate with 73 % probability, else free.
    Random,
    /// A transformer training loop.
    Training,
    /// LLM serving with growing KV caches (fragmentation-heavy).
    Serving,
    /// PyTorch devlog cases: 8×16 MiB then 4×32 MiB; 2 MiB then 0.5 MiB.
    Devlog,
    /// Buffers that grow by reallocation into GiB sizes (deep growth).
    Growth,
    /// One 8 GiB slice freed and reserved again in place (host cost per granule).
    Span,
    /// 20,000 small slices live while one is freed and another reserved (host cost per live slice).
    Live,
}

/// Parameters shared by every generator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkloadSpec {
    /// Seed of the generator's random number stream.
    pub seed: u64,
    /// Multiplier of the default length (1.0 = default op count).
    pub scale: f64,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            seed: 42,
            scale: 1.0,
        }
    }
}

impl WorkloadSpec {
    /// Checks `scale` is a positive finite number no larger than [`MAX_SCALE`].
    pub fn validate(&self) -> Result<()> {
        if !(self.scale.is_finite() && self.scale > 0.0 && self.scale <= MAX_SCALE) {
            return Err(ReplayError::InvalidArgument {
                option: "--scale",
                value: self.scale.to_string(),
                reason: format!("must be a number greater than 0 and at most {MAX_SCALE}"),
            });
        }
        Ok(())
    }

    /// `base` scaled, at least 1.
    pub(crate) fn scaled(&self, base: u64) -> u64 {
        ((base as f64 * self.scale).round() as u64).max(1)
    }
}

impl Workload {
    /// Every built-in workload, in the order the command lists them.
    pub const ALL: [Workload; 7] = [
        Workload::Random,
        Workload::Training,
        Workload::Serving,
        Workload::Devlog,
        Workload::Growth,
        Workload::Span,
        Workload::Live,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Random => "random",
            Workload::Training => "training",
            Workload::Serving => "serving",
            Workload::Devlog => "devlog",
            Workload::Growth => "growth",
            Workload::Span => "span",
            Workload::Live => "live",
        }
    }

    /// Generates the workload's events.
    pub fn generate(self, spec: &WorkloadSpec) -> Result<Vec<Event>> {
        Ok(self.generate_trace(spec)?.events)
    }

    /// Generates the workload as a trace whose allocations carry tags
    /// saying what they are for (`weights`, `kv-cache`, ...).
    pub fn generate_trace(self, spec: &WorkloadSpec) -> Result<Trace> {
        spec.validate()?;
        Ok(match self {
            Workload::Random => random::generate(spec),
            Workload::Training => training::generate(spec),
            Workload::Serving => serving::generate(spec),
            Workload::Devlog => devlog::generate(spec),
            Workload::Growth => growth::generate(spec),
            Workload::Span => span::generate(spec),
            Workload::Live => live::generate(spec),
        })
    }
}
