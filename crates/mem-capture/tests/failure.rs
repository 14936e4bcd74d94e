//! A backend that refuses a step: the capture aborts, and everything it
//! opened is closed again — pools, recording mark, lent graph memory.

mod common;

use common::fixtures::assert_restored;
use common::pass::{capture_once, pass, replay_read};
use common::*;
use mem_capture::{
    Capture, CaptureError, CapturePool, GraphBackend, HostGraph, HostGraphBackend, HostRecorder,
};

/// The host backend, refusing `begin_capture` or `end_capture` on demand.
#[derive(Default)]
struct Refusing {
    inner: HostGraphBackend,
    refuse_begin: bool,
    refuse_end: bool,
}

fn refused(op: &'static str) -> CaptureError {
    CaptureError::Backend {
        op,
        message: "injected".into(),
    }
}

impl GraphBackend for Refusing {
    type Graph = HostGraph;
    type Recorder = HostRecorder;

    fn begin_capture(&mut self) -> Result<(), CaptureError> {
        if self.refuse_begin {
            return Err(refused("begin capture"));
        }
        self.inner.begin_capture()
    }
    fn recorder(&mut self) -> &mut HostRecorder {
        self.inner.recorder()
    }
    fn is_capturing(&self) -> bool {
        self.inner.is_capturing()
    }
    fn end_capture(&mut self) -> Result<HostGraph, CaptureError> {
        let graph = self.inner.end_capture()?; // out of capture either way
        if self.refuse_end {
            return Err(refused("end capture"));
        }
        Ok(graph)
    }
    fn abort_capture(&mut self) {
        self.inner.abort_capture();
    }
    fn replay(
        &mut self,
        graph: &HostGraph,
        pools: &mut [&mut dyn CapturePool],
    ) -> Result<(), CaptureError> {
        self.inner.replay(graph, pools)
    }
}

#[test]
fn a_refused_begin_aborts_the_capture_and_restores_everything() {
    let mut dev = HostDevice::new(1, 1);
    let inp = dev.streams[0].reserve(KIB).unwrap();
    let mut backend = Refusing {
        refuse_begin: true,
        ..Refusing::default()
    };
    let mut capture = Capture::new();
    capture.prepare(&mut dev).unwrap();
    drop(pass(&mut dev, &inp, KIB, 1, None).unwrap());
    let err = capture.begin(&mut dev, &mut backend).unwrap_err();
    assert_eq!(err, refused("begin capture"));
    assert_restored(&mut dev, &backend, &capture, 1);
}

#[test]
fn a_refused_end_aborts_the_capture_and_restores_everything() {
    let mut dev = HostDevice::new(1, 1);
    let inp = dev.streams[0].reserve(KIB).unwrap();
    let mut backend = Refusing {
        refuse_end: true,
        ..Refusing::default()
    };
    let mut capture = Capture::new();
    capture.prepare(&mut dev).unwrap();
    drop(pass(&mut dev, &inp, KIB, 1, None).unwrap());
    capture.begin(&mut dev, &mut backend).unwrap();
    let rec = capture.recorder(&mut backend).unwrap();
    drop(pass(&mut dev, &inp, KIB, 1, Some(rec)).unwrap());
    let err = capture.end(&mut dev, &mut backend).unwrap_err();
    assert_eq!(err, refused("end capture"));
    assert_restored(&mut dev, &backend, &capture, 1);
}

#[test]
fn a_refused_sharing_capture_gives_the_lent_memory_back_to_its_graph() {
    let mut dev = HostDevice::new(1, 1);
    let mut host = HostGraphBackend::new();
    let inp = dev.streams[0].reserve(KIB).unwrap();
    dev.streams[0]
        .write(inp.binding(), &pattern(4, KIB as usize))
        .unwrap();
    let (g1, o1) = capture_once(&mut dev, &mut host, &inp, KIB, 1).unwrap();
    let mut backend = Refusing {
        refuse_end: true,
        ..Refusing::default()
    };
    let mut capture = Capture::sharing(g1.graph_pool());
    // The recorded pass keeps none of its reservations: one the caller still
    // held at the abort could legitimately sit on the lent slice (which of
    // the free slices it gets is the pool's choice), and a taken slice is
    // lost to its graph by design (lend.rs).
    let err = capture
        .run(
            &mut dev,
            &mut backend,
            |d| pass(d, &inp, KIB, 2, None).map(drop),
            |d, rec| pass(d, &inp, KIB, 2, Some(rec)).map(drop),
        )
        .unwrap_err();
    assert_eq!(err, refused("end capture"));
    assert_eq!(
        g1.graph_pool().pinned_slices(),
        2,
        "g1's temporary is pinned again"
    );
    let want: Vec<u8> = pattern(4, KIB as usize).iter().map(|b| b + 1).collect();
    assert_eq!(replay_read(&g1, &mut dev, &mut host, &o1).unwrap(), want);
}

#[test]
fn a_sharing_capture_aborted_after_warmup_pins_the_lent_temporary_back_in_place() {
    let mut dev = HostDevice::new(1, 1);
    let mut host = HostGraphBackend::new();
    let inp = dev.streams[0].reserve(KIB).unwrap();
    dev.streams[0]
        .write(inp.binding(), &pattern(4, KIB as usize))
        .unwrap();
    let (g1, o1) = capture_once(&mut dev, &mut host, &inp, KIB, 1).unwrap();
    let mut capture = Capture::sharing(g1.graph_pool());
    capture.prepare(&mut dev).unwrap();
    // The warmup frees everything it reserved: the lent slice is free when
    // the capture is abandoned, and must come back exactly.
    drop(pass(&mut dev, &inp, KIB, 2, None).unwrap());
    let allocs = dev.device_allocs();
    capture.abort(&mut dev, &mut host);
    assert_eq!(g1.graph_pool().pinned_slices(), 2, "temporary pinned again");
    assert_eq!(dev.device_allocs(), allocs, "re-claiming allocates nothing");
    let want: Vec<u8> = pattern(4, KIB as usize).iter().map(|b| b + 1).collect();
    assert_eq!(replay_read(&g1, &mut dev, &mut host, &o1).unwrap(), want);
}
