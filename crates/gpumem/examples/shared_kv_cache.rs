//! Two processes share a KV cache through gpumem: the writer reserves it
//! as a shareable buffer, fills it and sends its descriptor over a Unix
//! socket; the reader (this example started again with `--reader`) maps it
//! and reads what the writer wrote, with no copy. Then the writer drops
//! its side while the reader still reads.
//!
//! `cargo run -p gpumem --example shared_kv_cache`
//! (`GPUMEM_CONF=share:posix_fd` is set by the example itself; on a GPU
//! build the device with `Device::cuda(0)`.)

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::{Command, ExitCode};

use gpumem::prelude::*;
use gpumem::units::format_bytes;

/// Layers × heads × tokens × head size × 2 bytes (fp16), keys and values.
const LAYERS: u64 = 4;
const BYTES_PER_LAYER: u64 = 2 * 8 * 1024 * 64 * 2;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let result = match (args.next().as_deref(), args.next()) {
        (Some("--reader"), Some(path)) => reader(&path),
        _ => writer(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The byte the writer puts at offset `i` of layer `layer`.
fn value(layer: u64, i: u64) -> u8 {
    (layer as u8).wrapping_mul(31).wrapping_add((i % 199) as u8)
}

fn io(err: std::io::Error) -> GpuMemError {
    GpuMemError::ShareIo {
        operation: "the example's socket",
        errno: err.raw_os_error().unwrap_or(0),
    }
}

fn writer() -> Result<(), GpuMemError> {
    let device = Device::host().conf("share:posix_fd")?.build()?;
    let stream = device.default_stream();
    let cache = stream.reserve_shareable(LAYERS * BYTES_PER_LAYER)?;
    for layer in 0..LAYERS {
        let bytes: Vec<u8> = (0..BYTES_PER_LAYER).map(|i| value(layer, i)).collect();
        cache.write(layer * BYTES_PER_LAYER, &bytes)?;
    }
    println!(
        "writer: KV cache of {} ({} mapped) written, {} layers",
        format_bytes(cache.len()),
        format_bytes(cache.mapped_len()),
        LAYERS
    );

    let path = std::env::temp_dir().join(format!("gpumem-kv-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).map_err(io)?;
    let exe = std::env::current_exe().map_err(io)?;
    let mut reader = Command::new(exe)
        .arg("--reader")
        .arg(&path)
        .spawn()
        .map_err(io)?;
    let (mut socket, _) = listener.accept().map_err(io)?;
    let _ = std::fs::remove_file(&path);
    gpumem::sharing::send_shared(&socket, &stream.export(&cache)?)?;

    // The reader has mapped it: the writer lets go of its side, and the
    // reader reads on.
    let mut step = [0u8];
    socket.read_exact(&mut step).map_err(io)?;
    drop(cache);
    println!("writer: dropped its side of the cache");
    socket.write_all(b"d").map_err(io)?;
    let status = reader.wait().map_err(io)?;
    println!("writer: reader finished ({status})");
    Ok(())
}

fn reader(path: &str) -> Result<(), GpuMemError> {
    let mut socket = UnixStream::connect(path).map_err(io)?;
    let shared = gpumem::sharing::receive_shared(&socket)?;
    let device = Device::host().build()?;
    let cache = device.import(shared)?;
    println!(
        "reader: mapped {} from {}, no copy",
        format_bytes(cache.len()),
        cache.exporter()
    );
    socket.write_all(b"m").map_err(io)?;
    let mut step = [0u8];
    socket.read_exact(&mut step).map_err(io)?;
    let mut bytes = vec![0u8; BYTES_PER_LAYER as usize];
    for layer in 0..LAYERS {
        cache.read(layer * BYTES_PER_LAYER, &mut bytes)?;
        let same = bytes
            .iter()
            .enumerate()
            .all(|(i, &b)| b == value(layer, i as u64));
        if !same {
            return Err(GpuMemError::BadSharedBuffer {
                reason: format!("layer {layer} does not hold what the writer wrote"),
            });
        }
    }
    println!("reader: all {LAYERS} layers hold the writer's bytes after the writer let go");
    Ok(())
}
