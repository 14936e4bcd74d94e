//! The allocators of `gpumem compare`: one trace replayed through several allocators in one
//! process, one table (RMM's replay-benchmark idea).
//!
//! A user choosing an allocator wants the same trace through each of them
//! and the numbers side by side, measured the same way: gpumem's default
//! (`Device` on arenas), each paged layout of the facade's grammar, the
//! bare O(1) offset allocator, a modeled PyTorch caching allocator (with
//! and without expandable segments, `pytorch/`) and the
//! `cudaMalloc`-per-request baseline.
//! The trace is read and compiled once; every row replays the same
//! [`Program`] through the same timed loop.
//!
//! Failed allocations follow `gpumem replay`'s convention: the table is
//! printed whole, then the command fails naming who refused what, unless
//! `--allow-failures`.
//!
//! Rows replay one after another. Within a row the trace replays in order
//! on one thread, as `gpumem replay` does, unless `--threads` runs a
//! multi-stream trace on gpumem's rows with one thread per stream.

mod allocators;
mod frontier;
mod frontier_table;
mod offset;
pub mod pytorch;
mod rows;
mod splits;
mod table;
mod threads;

pub use allocators::{ALL, Allocator, parse_against};
pub use frontier::{
    Frontier, FrontierPoint, FrontierReference, IDLE_SHARES, MAX_CHUNKS_MIB,
    sweep as sweep_frontier,
};
pub use offset::{OffsetBackend, OffsetToken, UNIT, offset_allocator, units};
pub use rows::{Row, Setup, paged_max_page, run_row};
pub use table::Comparison;
pub use threads::{Lane, ThreadedRun, lanes, replay_threaded};

use crate::error::Result;
use crate::replay::Program;

/// Where gpumem's rows run. The peers that are not gpumem need no device
/// memory and run the same on either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum CompareBackend {
    /// `gpumem::Device::simulated`: addresses without memory.
    #[default]
    Sim,
    /// `gpumem::Device::host_with_capacity`: real host memory (capped at
    /// half of what this machine has available).
    Host,
}

impl CompareBackend {
    /// The name printed in the table's heading.
    pub fn name(self) -> &'static str {
        match self {
            CompareBackend::Sim => "sim",
            CompareBackend::Host => "host",
        }
    }
}

/// Replays `program` through every allocator of `allocators`, in order.
///
/// # Errors
/// A device the facade refuses to build, or a backend failure that
/// invalidates a replay. Refused allocations are not errors: each row
/// counts its own.
pub fn compare(
    source: &str,
    program: &Program,
    allocators: &[Allocator],
    setup: &Setup,
) -> Result<Comparison> {
    let rows = allocators
        .iter()
        .map(|&allocator| {
            let mut row = run_row(allocator, source, program, setup)?;
            if setup.splits && row.driver_ns_per_op.is_some() {
                row.driver_ns_per_op_by_split =
                    Some(splits::by_split(allocator, source, program, setup)?);
            }
            Ok(row)
        })
        .collect::<Result<Vec<_>>>()?;
    let paged = allocators.iter().any(|a| a.layout().is_some());
    Ok(Comparison {
        source: source.to_string(),
        backend: setup.backend.name(),
        device_bytes: setup.capacity,
        ops: program.ops.len() as u64,
        paged_max_page_bytes: paged.then(|| paged_max_page(setup, program)).flatten(),
        threaded_streams: (setup.threads
            && program.streams.len() > 1
            && allocators.iter().any(|a| a.is_gpumem()))
        .then_some(program.streams.len()),
        rows,
        input_notes: Vec::new(),
        frontier: None,
    })
}
