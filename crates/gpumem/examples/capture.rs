//! Graph capture over gpumem memory: warm up, record, replay, release.
//!
//! mem-capture drives the sequence and the graph; this uses its host graph
//! backend (a recorded list of operations), so it runs without a GPU.
//! `Stream::begin_capture_with(backend)` takes the CUDA backend the same way.
//!
//! `cargo run -p gpumem --example capture`

use gpumem::prelude::*;

/// One forward pass: a few buffers, one transient.
fn forward(stream: &Stream) -> Result<Vec<ManagedMemoryHandle>, GpuMemError> {
    let hidden = stream.reserve(512 * KIB)?;
    drop(stream.reserve(128 * KIB)?); // a transient
    let logits = stream.reserve(64 * KIB)?;
    Ok(vec![hidden, logits])
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
    let device = Device::host().build()?;
    let stream = device.default_stream();
    let weights = stream.reserve(256 * KIB)?;
    stream.write(&weights, &[2; 16])?;

    let warmup = stream.begin_capture()?;
    drop(forward(warmup.stream())?); // grows the pool to the pass's working set
    let mut recording = warmup.start_recording()?;
    let allocations_before = device.stats().storage_allocs;
    let outputs = forward(recording.stream())?; // reuses it: no allocation
    recording.uses(&weights)?; // a buffer the graph reads but did not reserve
    let (src, dst) = (stream.view(&weights)?, stream.view(&outputs[1])?);
    let src = src
        .narrow(None, Some(dst.size()))
        .expect("weights are larger");
    recording.recorder().copy(0, src, dst)?; // the "kernel" of the pass
    let mut graph = recording.end()?;
    assert_eq!(device.stats().storage_allocs, allocations_before);
    println!(
        "captured: {} slices pinned for the graph; no storage allocation while recording",
        graph.pinned_slices()
    );

    graph.replay()?;
    let mut first = [0u8; 4];
    stream.read(&outputs[1], &mut first)?;
    println!("after replay the logits start with {first:?}");

    // A reservation the warmup did not prepare is an error, not a driver fault.
    let recording = stream.begin_capture()?.start_recording()?;
    match recording.stream().reserve(64 * MIB) {
        Err(err) => println!("as expected: {err}"),
        Ok(_) => println!("unexpected: the capture window allocated"),
    }
    recording.abort();

    drop(outputs);
    drop(graph); // the graph's memory goes back to the pool
    drop(weights);
    stream.cleanup();
    println!(
        "reserved after dropping the graph: {} B",
        device.stats().reserved_bytes.current
    );
    Ok(())
}
