//! Graph capture over gpumem memory: warm up, record, keep the graph's memory.
//!
//! The backend graph itself (CUDA stream capture, or mem-capture's host
//! graph) is the runtime's; this shows the memory side that keeps it valid.
//!
//! `cargo run -p gpumem --example capture`

use gpumem::prelude::*;

/// One forward pass: a few buffers, one transient.
fn forward(stream: &Stream) -> Result<Vec<ManagedMemoryHandle>, GpuMemError> {
    let hidden = stream.reserve(512 * KIB)?;
    let transient = stream.reserve(128 * KIB)?;
    stream.write(&transient, &[1; 16])?;
    drop(transient);
    let logits = stream.reserve(64 * KIB)?;
    stream.submit();
    Ok(vec![hidden, logits])
}

fn main() -> Result<(), GpuMemError> {
    let device = Device::host().build()?;
    let stream = device.default_stream();

    let warmup = stream.begin_capture()?;
    drop(forward(warmup.stream())?); // grows the pool to the pass's working set
    let recording = warmup.start_recording();
    let allocations_before = device.stats().storage_allocs;
    let outputs = forward(recording.stream())?; // reuses it: no allocation
    let graph = recording.end();
    assert_eq!(device.stats().storage_allocs, allocations_before);
    println!(
        "captured: {} buffers, {} B pinned for the graph; no storage allocation while recording",
        graph.len(),
        graph.bytes()
    );

    // A reservation the warmup did not prepare is an error, not a driver fault.
    let warmup = stream.begin_capture()?;
    let recording = warmup.start_recording();
    match recording.stream().reserve(64 * MIB) {
        Err(err) => println!("as expected: {err}"),
        Ok(_) => println!("unexpected: the capture window allocated"),
    }
    recording.abort();

    drop(outputs);
    drop(graph); // the graph's memory goes back to the pool
    stream.cleanup();
    println!(
        "reserved after dropping the graph: {} B",
        device.stats().reserved_bytes.current
    );
    Ok(())
}
