//! `gpumem compare`: one trace replayed through several allocators in one
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
mod args;
mod offset;
pub mod pytorch;
mod rows;
mod table;
mod threads;

use std::io::Write;

pub use allocators::{ALL, Allocator, parse_against};
pub use args::{CompareArgs, CompareBackend};
pub use offset::{OffsetBackend, OffsetToken, UNIT, offset_allocator, units};
pub use rows::{Row, Setup, paged_max_page, run_row};
pub use table::Comparison;
pub use threads::{Lane, ThreadedRun, lanes, replay_threaded};

use crate::error::{CliError, Result};
use crate::input::{
    base_config, device_bytes, host_capacity, input_notes, load_input, write_notes,
};
use crate::replay::Program;
use gpumem::storage::units::format_bytes;

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
        .map(|&allocator| run_row(allocator, source, program, setup))
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
    })
}

fn write_err(what: &'static str) -> impl FnOnce(std::io::Error) -> CliError {
    move |source| CliError::Io {
        what: what.to_string(),
        source,
    }
}

/// Runs `gpumem compare`: the table (or JSON) on `out`, notes and warnings
/// on `err`.
///
/// # Errors
/// Bad arguments, unreadable input, a backend failure, or — after the
/// table is written — [`CliError::CompareFailures`] when an allocator
/// refused allocations and `--allow-failures` was not given.
pub fn run_compare(args: &CompareArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<()> {
    let allocators = match &args.against {
        Some(list) => parse_against(list)?,
        None => ALL.to_vec(),
    };
    let mut capacity = device_bytes(args.device_gib)?;
    if args.backend == CompareBackend::Host {
        let (capped, was_capped) = host_capacity(capacity);
        if was_capped {
            writeln!(
                err,
                "note: the host backend holds real memory; device capped at {} \
                 (half of this machine's available memory) for every row",
                format_bytes(capped)
            )
            .map_err(write_err("stderr"))?;
        }
        capacity = capped;
    }
    let setup = Setup {
        backend: args.backend,
        capacity,
        config: base_config()?,
        threads: args.threads,
        pytorch: match &args.pytorch_conf {
            Some(text) => pytorch::parse_pytorch_conf(text)?,
            None => pytorch::Policy::default(),
        },
    };
    let (trace, source) = load_input(&args.input)?;
    let notes = input_notes(&trace, &source);
    write_notes(&notes, err).map_err(write_err("stderr"))?;
    let program = Program::compile(&trace.events)?;
    drop(trace);

    let mut comparison = compare(&source, &program, &allocators, &setup)?;
    comparison.input_notes = notes;
    if args.json {
        let text = serde_json::to_string(&comparison).map_err(|e| CliError::Io {
            what: "JSON comparison".to_string(),
            source: e.into(),
        })?;
        writeln!(out, "{text}").map_err(write_err("stdout"))?;
    } else {
        write!(out, "{comparison}").map_err(write_err("stdout"))?;
    }
    out.flush().map_err(write_err("stdout"))?;

    let failing: Vec<String> = comparison
        .failing()
        .map(|row| {
            let first = row.first_failure.as_deref().unwrap_or("no message");
            format!(
                "{} ({} of {}; first: {})",
                row.allocator,
                row.failed_allocs,
                row.allocs + row.failed_allocs,
                first.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        })
        .collect();
    if failing.is_empty() || args.allow_failures {
        return Ok(());
    }
    Err(CliError::CompareFailures {
        summary: failing.join("; "),
    })
}

#[cfg(test)]
mod tests;
