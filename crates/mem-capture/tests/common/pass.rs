//! One recorded pass used across the tests: out = in + temp, where temp is
//! filled with `seed` and dropped inside the pass (a graph temporary).

use mem_capture::{
    Capture, CaptureError, CapturedGraph, GraphBackend, HostGraph, HostGraphBackend, HostRecorder,
};
use mem_pools::ManagedMemoryHandle;

use super::HostDevice;

/// Reserve `temp` and `out` on the recording stream, and record (when a
/// recorder is given): fill temp with `seed`, out[i] = input[i] + temp[i].
pub fn pass(
    dev: &mut HostDevice,
    input: &ManagedMemoryHandle,
    size: u64,
    seed: u8,
    recorder: Option<&mut HostRecorder>,
) -> Result<ManagedMemoryHandle, CaptureError> {
    let mm = &mut dev.streams[0];
    let temp = mm.reserve(size)?;
    let out = mm.reserve(size)?;
    let (t, o, i) = (
        mm.get_storage(temp.binding())?,
        mm.get_storage(out.binding())?,
        mm.get_storage(input.binding())?,
    );
    if let Some(rec) = recorder {
        rec.fill(0, t, seed)?;
        rec.kernel("add", vec![(0, i), (0, t), (0, o)], |args| {
            let sum: Vec<u8> = args[0]
                .iter()
                .zip(&args[1])
                .map(|(a, b)| a.wrapping_add(*b))
                .collect();
            args[2].copy_from_slice(&sum);
        })?;
    }
    drop(temp);
    Ok(out)
}

/// Capture [`pass`] with `capture`; returns the graph and the output handle.
pub fn capture_pass(
    capture: &mut Capture,
    dev: &mut HostDevice,
    backend: &mut HostGraphBackend,
    input: &ManagedMemoryHandle,
    size: u64,
    seed: u8,
) -> Result<(CapturedGraph<HostGraph>, ManagedMemoryHandle), CaptureError> {
    let mut out = None;
    let graph = capture.run(
        dev,
        backend,
        |d| pass(d, input, size, seed, None).map(drop),
        |d, rec| {
            out = Some(pass(d, input, size, seed, Some(rec))?);
            Ok(())
        },
    )?;
    let out = out.ok_or(CaptureError::EmptyGraph)?;
    Ok((graph, out))
}

/// [`capture_pass`] with a capture of its own (not sharing a graph pool).
pub fn capture_once(
    dev: &mut HostDevice,
    backend: &mut HostGraphBackend,
    input: &ManagedMemoryHandle,
    size: u64,
    seed: u8,
) -> Result<(CapturedGraph<HostGraph>, ManagedMemoryHandle), CaptureError> {
    capture_pass(&mut Capture::new(), dev, backend, input, size, seed)
}

/// Replay and read `out`.
pub fn replay_read(
    graph: &CapturedGraph<HostGraph>,
    dev: &mut HostDevice,
    backend: &mut HostGraphBackend,
    out: &ManagedMemoryHandle,
) -> Result<Vec<u8>, CaptureError> {
    graph.replay(backend, dev)?;
    let mut bytes = vec![0u8; out.size() as usize];
    dev.streams[0].read(out.binding(), &mut bytes)?;
    let _ = backend.is_capturing();
    Ok(bytes)
}
