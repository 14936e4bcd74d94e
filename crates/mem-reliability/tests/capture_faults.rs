//! mem-capture's whole capture sequence (`Capture::run` over the host graph
//! backend, on a world's stream) with each device call failed in turn.
//!
//! Whatever call fails — in the relocation before warmup, the warmup's
//! pages, the recorded pass, a replay — the capture either completes and
//! its graph replays the right bytes, or returns a typed error with no
//! capture left open; and once everything is dropped nothing is outstanding.

use mem_capture::{Capture, CaptureError, CapturePool, CaptureStreams, HostGraphBackend};
use mem_pools::{ManagedMemoryHandle, RelocationCopyError, StorageCopyQueue};
use mem_reliability::{Limits, World, pattern};
use mem_relocate::{RelocationError, RelocationReason, relocate_memory};

const SIZE: u64 = 4096;
const SEED: u8 = 3;

/// Stream 0 of a world as a one-stream capture device.
struct Device {
    world: World,
    recording: bool,
}

impl CaptureStreams for Device {
    fn recording_streams(&mut self) -> usize {
        usize::from(self.recording)
    }
    fn set_recording(&mut self, recording: bool) {
        self.recording = recording;
    }
    fn relocate_device(&mut self) {
        // A failed relocation moves nothing, or leaks (the model is told);
        // either way the capture goes on.
        let manager = self.world.manager(0);
        let moved = relocate_memory(manager, RelocationReason::Capture, &mut StorageCopyQueue);
        if let Err(RelocationError::Copy(RelocationCopyError::Wait { leaked_bytes, .. })) = moved {
            self.world.note_failed_wait(0, leaked_bytes);
        }
    }
    fn capture_pools(&mut self) -> Vec<&mut dyn CapturePool> {
        vec![self.world.manager(0) as &mut dyn CapturePool]
    }
}

/// out = input + temp, temp filled with SEED and dropped inside the pass.
fn pass(
    dev: &mut Device,
    input: &ManagedMemoryHandle,
    recorder: Option<&mut mem_capture::HostRecorder>,
) -> Result<ManagedMemoryHandle, CaptureError> {
    let m = dev.world.manager(0);
    let temp = m.reserve(SIZE)?;
    let out = m.reserve(SIZE)?;
    let (t, o, i) = (
        m.get_storage(temp.binding())?,
        m.get_storage(out.binding())?,
        m.get_storage(input.binding())?,
    );
    if let Some(rec) = recorder {
        rec.fill(0, t, SEED)?;
        rec.kernel("add", vec![(0, i), (0, t), (0, o)], |args| {
            let sum: Vec<u8> = args[0]
                .iter()
                .zip(&args[1])
                .map(|(a, b)| a.wrapping_add(*b))
                .collect();
            args[2].copy_from_slice(&sum);
        })?;
    }
    Ok(out)
}

/// What one run did: device calls made, whether the graph replayed.
struct Run {
    calls: u64,
    faults: u64,
    replayed: bool,
}

/// Build a device with some growth (so relocation has work), capture the
/// pass, replay it twice, check the bytes, drop everything, prove nothing
/// is outstanding. `fail` arms the k-th call.
fn run(fail: Option<u64>) -> Run {
    let mut dev = Device {
        world: World::new(Limits::default()),
        recording: false,
    };
    let m = dev.world.manager(0);
    let input = m.reserve(SIZE).unwrap();
    let data = pattern(11, SIZE as usize);
    m.write(input.binding(), &data).unwrap();
    let _small: Vec<_> = (0..3).map(|_| m.reserve(1000).unwrap()).collect();
    let _grown = m.reserve(9000).unwrap();
    dev.world.device().reset_count();
    if let Some(k) = fail {
        dev.world.device().arm(k);
    }
    let mut backend = HostGraphBackend::new();
    let mut out = None;
    let captured = Capture::new().run(
        &mut dev,
        &mut backend,
        |d| pass(d, &input, None).map(drop),
        |d, rec| {
            out = Some(pass(d, &input, Some(rec))?);
            Ok(())
        },
    );
    let mut replayed = false;
    let outcome: Result<(), CaptureError> = captured.and_then(|graph| {
        let out = out.take().ok_or(CaptureError::EmptyGraph)?;
        for _ in 0..2 {
            graph.replay(&mut backend, &mut dev)?;
        }
        let mut bytes = vec![0u8; SIZE as usize];
        dev.world.manager(0).read(out.binding(), &mut bytes)?;
        let want: Vec<u8> = data.iter().map(|b| b.wrapping_add(SEED)).collect();
        assert_eq!(
            bytes, want,
            "k={fail:?}: the replayed graph computed wrong bytes"
        );
        replayed = true;
        drop(graph);
        Ok(())
    });
    let (calls, faults) = (dev.world.device().calls(), dev.world.device().injected());
    dev.world.device().disarm();
    if let Err(e) = &outcome {
        assert!(
            faults > 0,
            "k={fail:?}: failed without an injected fault: {e}"
        );
    }
    assert!(!dev.recording, "k={fail:?}: a stream is left recording");
    let state = dev.world.manager(0).capture_state();
    assert!(
        !state.active,
        "k={fail:?}: a capture is left open: {state:?}"
    );
    drop((out, input, _small, _grown));
    dev.world
        .finish()
        .unwrap_or_else(|v| panic!("k={fail:?}: {v}"));
    Run {
        calls,
        faults,
        replayed,
    }
}

#[test]
fn a_capture_without_faults_replays_the_right_bytes_and_leaves_nothing() {
    let clean = run(None);
    assert!(clean.replayed);
    assert!(clean.calls > 5, "only {} device calls", clean.calls);
}

#[test]
fn a_capture_survives_each_single_failed_device_call() {
    let calls = run(None).calls;
    let (mut failed, mut completed) = (0, 0);
    for k in 1..=calls {
        let r = run(Some(k));
        assert_eq!(r.faults, 1, "k={k}");
        if r.replayed {
            completed += 1;
        } else {
            failed += 1;
        }
    }
    // Some faults land where they can be absorbed, others abort the capture.
    assert!(failed > 0, "no fault aborted the capture in {calls} calls");
    assert_eq!(failed + completed, calls);
}
