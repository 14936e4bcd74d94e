//! A device budget: pool pages are charged to it, a refusal is retried once
//! after cached memory is given back, and the out-of-memory report says why.
//!
//! `cargo run -p gpumem --example budget`

use gpumem::prelude::*;
use gpumem::units::format_bytes;

/// Runs the example; an error is printed with its message (`Display`),
/// not its `Debug` form, and the process exits with status 1.
fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), GpuMemError> {
    // 64 MiB of a (host-simulated) 1 GiB device, across two streams.
    let device = Device::host_with_capacity(GIB)
        .budget(Budget::Bytes(64 * MIB))
        .streams(2)
        .build()?;
    let (s0, s1) = (device.stream(0)?, device.stream(1)?);
    let budget = device.budget();

    // Stream 1 uses 40 MiB and frees it: the pages stay cached, still charged.
    drop(s1.reserve(40 * MIB)?);
    s1.with_memory(|_| ());
    println!(
        "after stream 1's free: {} charged (cached)",
        format_bytes(budget.charged())
    );

    // Stream 0 needs 40 MiB: refused, stream 1's cache is given back, retried.
    let big = s0.reserve(40 * MIB)?;
    println!(
        "stream 0 got 40 MiB after {} retry; {} charged",
        device.stats().num_alloc_retries,
        format_bytes(budget.charged())
    );

    // More than the budget has left: the report names every number.
    match s0.reserve(40 * MIB) {
        Err(GpuMemError::OutOfMemory(report)) => {
            println!("{report}");
            println!("refused by: {}", report.refused_by);
        }
        Err(other) => return Err(other),
        Ok(_) => println!("unexpected: the budget allowed it"),
    }

    // A fraction of the device works too (PyTorch's memory fraction).
    let half = Device::host_with_capacity(GIB)
        .budget(Budget::Fraction(0.5))
        .build()?;
    println!(
        "a 0.5 budget of 1 GiB is {}",
        format_bytes(half.budget().limit())
    );
    drop(big);
    Ok(())
}
