//! A runtime author's integration: allocate, bind, launch-like use on two
//! streams, free, report. Runs on the host backend in milliseconds.
//!
//! `cargo run -p gpumem --example runtime_integration`

use gpumem::prelude::*;
use gpumem::units::format_bytes;

/// A stand-in for a kernel launch: reads `input`, writes `output`, on `stream`.
fn launch_scale(
    stream: &Stream,
    input: &ManagedMemoryHandle,
    output: &ManagedMemoryHandle,
    factor: u8,
) -> Result<u64, GpuMemError> {
    // The runtime checks the cursor rule for memory another stream produced.
    if let Some(wait) = stream.must_wait(input)? {
        stream.wait_for(wait)?;
    }
    stream.stamp(output)?; // output is bound for the operation about to run
    // The launch records input's use (it may belong to another stream) and
    // keeps every move out until the submit: the "kernel" below works on
    // the memory the buffers have now.
    let launch = stream.launch(&[input, output])?;
    let mut data = vec![0; input.size().min(output.size()) as usize];
    stream.read(input, &mut data)?;
    data.iter_mut().for_each(|b| *b = b.wrapping_mul(factor));
    stream.write(output, &data)?;
    Ok(launch.submit())
}

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
    // GPUMEM_CONF still applies (e.g. GPUMEM_CONF=poison:on).
    let device = Device::host()
        .budget(Budget::Bytes(256 * MIB))
        .streams(2)
        .build()?;
    let (compute, copy) = (device.stream(0)?, device.stream(1)?);

    // Weights live for the model's life: reserve them in a persistent window.
    compute.mode(MemoryAllocationMode::Persistent);
    let weights = compute.reserve(MIB)?;
    compute.mode(MemoryAllocationMode::Auto);
    compute.write(&weights, &vec![3; MIB as usize])?;

    for step in 0..4u8 {
        // Activations: reserve, bind a fresh buffer into the tensor's handle.
        let activation = compute.reserve(256 * KIB)?;
        let scratch = compute.reserve(256 * KIB)?;
        compute.bind(scratch, activation.clone())?;
        let op = launch_scale(&compute, &weights, &activation, step + 1)?;

        // The copy stream consumes the activation while compute moves on.
        let staged = copy.reserve(256 * KIB)?;
        launch_scale(&copy, &activation, &staged, 1)?;
        compute.complete_through(op)?;
        drop(activation); // held for the copy stream until its work completes
        copy.synchronize()?;
        let mut first = [0u8; 1];
        copy.read(&staged, &mut first)?;
        println!("step {step}: first byte {}", first[0]);
    }

    device.synchronize()?;
    device.reclaim()?;
    let stats = device.stats();
    println!(
        "peak allocated {}, peak reserved {}, {} storage allocations",
        format_bytes(stats.allocated_bytes.peak),
        format_bytes(stats.reserved_bytes.peak),
        stats.storage_allocs
    );
    println!("{}", device.memory_report());
    drop(weights);
    Ok(())
}
