//! Every step out of order is a typed error that changes nothing; abort
//! works from every stage. Checked against a model over random call orders.

mod common;

use common::*;
use mem_capture::{
    Capture, CaptureError, CaptureStage, CapturedGraph, GraphBackend, HostGraph, HostGraphBackend,
};
use mem_pools::{CaptureState, ManagedMemoryHandle, MemoryAllocationMode, MemoryUsage};
use proptest::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    Prepare,
    Warm,
    Begin,
    Record,
    End,
    Abort,
}

#[derive(Debug, PartialEq)]
struct Snapshot {
    stage: CaptureStage,
    recording: usize,
    pools: Vec<(CaptureState, MemoryAllocationMode, MemoryUsage)>,
    backend_capturing: bool,
    recorded: usize,
    device_allocs: u64,
}

struct World {
    dev: HostDevice,
    backend: HostGraphBackend,
    capture: Capture,
    buffer: ManagedMemoryHandle,
    graphs: Vec<CapturedGraph<HostGraph>>,
}

impl World {
    fn new() -> Self {
        let mut dev = HostDevice::new(2, 2);
        let buffer = dev.streams[0].reserve(KIB).unwrap();
        Self {
            dev,
            backend: HostGraphBackend::new(),
            capture: Capture::new(),
            buffer,
            graphs: Vec::new(),
        }
    }

    fn snapshot(&mut self) -> Snapshot {
        Snapshot {
            stage: self.capture.stage(),
            recording: self.dev.flag.recording_streams(),
            pools: self
                .dev
                .streams
                .iter()
                .map(|p| (p.capture_state(), p.effective_mode(), p.memory_usage()))
                .collect(),
            backend_capturing: self.backend.is_capturing(),
            recorded: self.backend.recorder().recorded(),
            device_allocs: self.dev.device_allocs(),
        }
    }

    fn call(&mut self, call: Call) -> Result<(), CaptureError> {
        let (dev, backend) = (&mut self.dev, &mut self.backend);
        match call {
            Call::Prepare => self.capture.prepare(dev),
            Call::Warm => {
                if self.capture.stage() != CaptureStage::WarmingUp {
                    return Err(CaptureError::WrongStage {
                        call: "warm",
                        expected: CaptureStage::WarmingUp,
                        found: self.capture.stage(),
                    });
                }
                drop(dev.streams[0].reserve(2 * KIB)?);
                Ok(())
            }
            Call::Begin => self.capture.begin(dev, backend),
            Call::Record => {
                let recorder = self.capture.recorder(backend)?;
                let view = dev.streams[0].get_storage(self.buffer.binding())?;
                recorder.fill(0, view, 3)
            }
            Call::End => self.capture.end(dev, backend).map(|g| self.graphs.push(g)),
            Call::Abort => {
                self.capture.abort(dev, backend);
                Ok(())
            }
        }
    }
}

/// The model: which stage a call needs, and where it leads.
fn model(stage: CaptureStage, recorded: usize, call: Call) -> Option<CaptureStage> {
    use CaptureStage::*;
    match (call, stage) {
        (Call::Prepare, Idle) => Some(WarmingUp),
        (Call::Warm, WarmingUp) => Some(WarmingUp),
        (Call::Begin, WarmingUp) => Some(Recording),
        (Call::Record, Recording) => Some(Recording),
        (Call::End, Recording) if recorded > 0 => Some(Sealed),
        (Call::End, Recording) => Some(Idle), // EmptyGraph aborts
        (Call::Abort, _) => Some(Idle),
        _ => None,
    }
}

fn check(calls: &[Call]) {
    let mut world = World::new();
    let mut recorded = 0;
    for &call in calls {
        let before = world.snapshot();
        let result = world.call(call);
        let after = world.snapshot();
        match model(before.stage, recorded, call) {
            None => {
                let err = result.expect_err("an out-of-order call is refused");
                assert!(
                    matches!(err, CaptureError::WrongStage { .. }),
                    "{call:?}: {err}"
                );
                assert_eq!(
                    before, after,
                    "{call:?} in {} changed something",
                    before.stage
                );
            }
            Some(next) => {
                if call == Call::End && recorded == 0 {
                    assert_eq!(result, Err(CaptureError::EmptyGraph));
                } else {
                    result.unwrap_or_else(|e| panic!("{call:?} in {}: {e}", before.stage));
                }
                assert_eq!(after.stage, next, "{call:?}");
            }
        }
        recorded = match (call, after.stage) {
            (Call::Record, CaptureStage::Recording) => recorded + 1,
            (_, CaptureStage::Recording) => recorded,
            _ => 0,
        };
        // Invariants of every stage.
        let open = matches!(
            after.stage,
            CaptureStage::WarmingUp | CaptureStage::Recording
        );
        assert_eq!(after.recording, usize::from(open));
        assert_eq!(
            after.backend_capturing,
            after.stage == CaptureStage::Recording
        );
        for (state, mode, _) in &after.pools {
            assert_eq!(state.active, open);
            assert_eq!(*mode == MemoryAllocationMode::Persistent, open);
        }
    }
    world.capture.abort(&mut world.dev, &mut world.backend);
    let graphs = std::mem::take(&mut world.graphs);
    for graph in &graphs {
        graph.replay(&mut world.backend, &mut world.dev).unwrap();
    }
}

#[test]
fn every_wrong_call_order_is_a_typed_error_that_changes_nothing() {
    use Call::*;
    let wrong_in_idle = [Begin, Record, End, Warm];
    for call in wrong_in_idle {
        check(&[call]);
    }
    for call in [Prepare, Record, End] {
        check(&[Prepare, call]);
    }
    for call in [Prepare, Warm, Begin] {
        check(&[Prepare, Begin, call]);
    }
    for call in [Prepare, Warm, Begin, Record, End] {
        check(&[Prepare, Begin, Record, End, call]);
    }
}

#[test]
fn abort_works_from_every_stage_and_the_capture_is_reusable() {
    use Call::*;
    for prefix in [
        &[][..],
        &[Prepare],
        &[Prepare, Begin],
        &[Prepare, Begin, Record, End],
    ] {
        let mut calls = prefix.to_vec();
        calls.extend([Abort, Prepare, Warm, Begin, Record, End]);
        check(&calls);
    }
}

#[test]
fn ending_an_empty_recording_is_refused_and_aborts() {
    check(&[Call::Prepare, Call::Begin, Call::End, Call::Prepare]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_call_orders_follow_the_state_machine(calls in prop::collection::vec(
        prop::sample::select(vec![
            Call::Prepare, Call::Warm, Call::Begin, Call::Record, Call::End, Call::Abort,
        ]),
        1..24,
    )) {
        check(&calls);
    }
}
