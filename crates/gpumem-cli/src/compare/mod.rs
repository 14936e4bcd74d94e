//! `gpumem compare`: its arguments and its output; the rows are
//! `gpumem_replay::compare`'s (one trace replayed through several
//! allocators in one process, one table).
//!
//! Failed allocations follow `gpumem replay`'s convention: the table is
//! printed whole, then the command fails naming who refused what, unless
//! `--allow-failures`.

mod args;

use std::io::Write;

pub use args::CompareArgs;

use crate::input::{load_input, write_notes};
use crate::{CliError, Result};
use gpumem::storage::units::format_bytes;
use gpumem_replay::compare::{
    ALL, CompareBackend, Setup, compare, parse_against, pytorch, sweep_frontier,
};
use gpumem_replay::replay::Program;
use gpumem_replay::setup::{base_config, device_bytes, host_capacity};
use gpumem_replay::trace::input_notes;

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
        splits: args.splits,
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
    if args.frontier {
        comparison.frontier = Some(sweep_frontier(&source, &program, &setup)?);
    }
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
mod frontier_tests;
#[cfg(test)]
mod tests;
