//! The CUDA copy queue and stream set on a real device; skipped (with the
//! reason printed) where no driver or device is present.

mod common;

use std::sync::Arc;

use common::*;
use mem_relocate::{RelocatingStreams, RelocationReason, cuda_stream_set};
use mem_storage::CudaResource;

fn device() -> Option<Arc<CudaResource>> {
    if !mem_storage::cuda_available() {
        println!("skipping: the CUDA driver library (libcuda) cannot be loaded");
        return None;
    }
    match CudaResource::new(0) {
        Ok(cuda) => Some(Arc::new(cuda)),
        Err(err) => {
            println!("skipping: {err}");
            None
        }
    }
}

#[test]
fn cuda_streams_relocate_live_bytes_through_a_copy_stream_ordered_after_every_stream() {
    let Some(cuda) = device() else { return };
    let mut set = cuda_stream_set(cuda, 2, growable(), &props()).unwrap();
    let mut kept = Vec::new();
    for stream in 0..2 {
        let mm = set.memory(stream).unwrap();
        kept.push((
            stream,
            written(mm, KIB, 1 + stream as u64),
            1 + stream as u64,
        ));
        kept.push((
            stream,
            written(mm, 5 * KIB, 7 + stream as u64),
            7 + stream as u64,
        ));
    }
    let before: Vec<_> = kept
        .iter()
        .map(|(s, h, _)| place(set.memory(*s).unwrap(), h))
        .collect();
    assert!(set.device_has_outdated());
    set.relocate_device(RelocationReason::Capture);
    assert_eq!(set.log().failures, 0, "{:?}", set.log().last_error);
    assert!(!set.device_has_outdated());
    for ((stream, handle, seed), at) in kept.iter().zip(before) {
        let mm = set.memory(*stream).unwrap();
        assert!(intact(mm, handle, *seed), "bytes survived the move");
        if handle.size() == KIB {
            assert_ne!(place(mm, handle), at, "the outdated page's slice moved");
        }
    }
    set.reclaim().unwrap();
}
