//! Capturing on a stream of mem-relocate's `StreamSet`: the pre-warmup
//! relocation is `relocate_device(RelocationReason::Capture)`, and the set
//! refuses to relocate or reclaim while the capture records.

mod common;

use common::*;
use mem_capture::{Capture, CaptureError, HostGraphBackend, StreamSetCapture};
use mem_relocate::{RelocatingStreams, RelocationError, StorageCopyQueue, StreamSet};
use mem_storage::{HostResource, ResourceStorage, StatsResource};

type Set = StreamSet<ResourceStorage<Counted>>;

fn set(streams: usize) -> Set {
    let resource: Counted = std::sync::Arc::new(StatsResource::new(HostResource::new()));
    let mut set = StreamSet::new(pool(&resource), StorageCopyQueue);
    for _ in 1..streams {
        set.add_stream(pool(&resource));
    }
    set
}

/// Stream 1 holds `KIB * 10` of data on a page its growth left outdated.
fn outdated_on_stream_1(
    set: &mut Set,
) -> (
    mem_pools::ManagedMemoryHandle,
    mem_pools::ManagedMemoryHandle,
) {
    let mm = set.memory(1).unwrap();
    let old = mm.reserve(10 * KIB).unwrap();
    mm.write(old.binding(), &pattern(3, 10 * KIB as usize))
        .unwrap();
    let big = mm.reserve(100 * KIB).unwrap();
    assert!(mm.has_outdated());
    (old, big)
}

fn record_fill(
    capture: &mut Capture,
    on: &mut StreamSetCapture<'_, ResourceStorage<Counted>>,
    backend: &mut HostGraphBackend,
) -> Result<mem_capture::CapturedGraph<mem_capture::HostGraph>, CaptureError> {
    capture.run(
        on,
        backend,
        |d| {
            drop(d.memory()?.reserve(KIB)?);
            Ok(())
        },
        |d, rec| {
            let mm = d.memory()?;
            let h = mm.reserve(KIB)?;
            rec.fill(0, mm.get_storage(h.binding())?, 5)
        },
    )
}

#[test]
fn prepare_relocates_every_stream_of_the_set_for_the_capture() {
    let mut set = set(2);
    let (old, _big) = outdated_on_stream_1(&mut set);
    let mut backend = HostGraphBackend::new();
    let graph = record_fill(
        &mut Capture::new(),
        &mut StreamSetCapture::new(&mut set, 0),
        &mut backend,
    )
    .unwrap();
    assert!(
        !set.memory(1).unwrap().has_outdated(),
        "stream 1 moved before the warmup"
    );
    assert!(set.log().attempts > 0);
    let mm = set.memory(1).unwrap();
    assert_eq!(
        read(mm, &old, 10 * KIB as usize),
        pattern(3, 10 * KIB as usize)
    );
    assert_eq!(graph.pinned_slices(), 1);
    assert!(set.recording_streams().is_empty(), "unmarked at seal");
}

#[test]
fn the_set_refuses_to_reclaim_while_the_capture_records() {
    let mut set = set(2);
    let mut backend = HostGraphBackend::new();
    let mut capture = Capture::new();
    let mut on = StreamSetCapture::new(&mut set, 0);
    capture.prepare(&mut on).unwrap();
    assert_eq!(on.set.recording_streams(), vec![0]);
    let (_old, _big) = outdated_on_stream_1(on.set);
    on.set.set_relocating(1).unwrap();
    assert!(RelocatingStreams::reclaim(on.set).is_err());
    assert!(on.set.memory(1).unwrap().has_outdated(), "nothing moved");
    // A second capture on the other stream is refused, changing nothing.
    let mut other = StreamSetCapture::new(on.set, 1);
    let err = Capture::new().prepare(&mut other).unwrap_err();
    assert_eq!(
        err,
        CaptureError::Streams(RelocationError::Recording { recording: 1 })
    );
    let mut on = StreamSetCapture::new(other.set, 0);
    capture.abort(&mut on, &mut backend);
    assert!(on.set.recording_streams().is_empty());
    on.set.set_relocating(1).unwrap();
    RelocatingStreams::reclaim(on.set).unwrap();
    assert!(!on.set.memory(1).unwrap().has_outdated());
}

#[test]
fn a_capture_on_a_stream_the_set_lacks_is_refused() {
    let mut set = set(1);
    let mut on = StreamSetCapture::new(&mut set, 4);
    assert_eq!(
        Capture::new().prepare(&mut on).unwrap_err(),
        CaptureError::NoPools
    );
    assert!(set.recording_streams().is_empty());
}

#[test]
fn a_stream_the_set_lacks_is_named_with_the_set_s_stream_count() {
    let mut set = set(2);
    let mut streams = StreamSetCapture::new(&mut set, 5);
    assert_eq!(
        streams.memory().map(drop),
        Err(CaptureError::Streams(RelocationError::UnknownStream {
            stream: 5,
            streams: 2
        }))
    );
}
