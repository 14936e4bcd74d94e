//! The CUDA copy queue on a real device, under the tests' small runtime; skipped (with the
//! reason printed) where no driver or device is present.

mod common;

use std::sync::Arc;

use common::*;
use mem_pools::{MemoryManagement, MemoryManagementOptions, ServerLogger};
use mem_relocate::{CudaCopyQueue, CudaStreamStorage, RelocatingStreams, RelocationReason};
use mem_storage::{ComputeStorage, CudaResource, ResourceStorage};

/// `streams` new CUDA streams of `cuda`, each with its own growable engine,
/// moving memory through a [`CudaCopyQueue`]; the device's total memory is
/// the capacity pressure is measured against.
fn cuda_streams(cuda: Arc<CudaResource>, streams: usize) -> TestStreams<CudaStreamStorage> {
    let manager = |index: usize| {
        let stream = cuda.create_stream().unwrap();
        MemoryManagement::from_configuration(
            ResourceStorage::on_stream(cuda.clone(), stream),
            &props(),
            growable(),
            Arc::new(ServerLogger::default()),
            MemoryManagementOptions::named(format!("cuda stream {index}")),
        )
    };
    let mut set = TestStreams::new(manager(0), CudaCopyQueue::new(cuda.clone()).unwrap());
    for index in 1..streams {
        set.add_stream(manager(index));
    }
    let total = set.memory(0).unwrap().storage().mem_info().unwrap().total;
    set.set_capacity(Some(total));
    set
}

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
    let mut set = cuda_streams(cuda, 2);
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

/// A relocation copy reads only after every stream's queued work.
/// Stream `s` queues many large fills of the source, the last one 0x5A;
/// the copy queue then copies the source without any host wait in between.
/// Were the copy not ordered after `s`'s work it would read an earlier fill.
#[test]
fn a_relocation_copy_is_ordered_after_every_streams_queued_work() {
    use mem_pools::CopyQueue;
    use mem_relocate::CudaCopyQueue;
    use mem_storage::{ComputeStorage, DeviceResource, ResourceStorage};

    let Some(cuda) = device() else { return };
    const BYTES: u64 = 256 << 20;
    let s = cuda.create_stream().unwrap();
    let mut storage = ResourceStorage::on_stream(cuda.clone(), s);
    let src = storage.alloc(BYTES).unwrap();
    let dst = storage.alloc(BYTES).unwrap();
    let src_ptr = storage.get(&src).unwrap().ptr;
    for value in 1..=24u8 {
        cuda.fill(src_ptr, value, BYTES, s).unwrap();
    }
    cuda.fill(src_ptr, 0x5A, BYTES, s).unwrap();
    let mut queue = CudaCopyQueue::new(cuda.clone()).unwrap();
    queue.wait_device(&mut storage).unwrap();
    queue.copy(&mut storage, &src, &dst).unwrap();
    queue.wait_copies(&mut storage).unwrap();
    let mut head = vec![0u8; 4096];
    storage.read(&dst, &mut head).unwrap();
    assert!(
        head.iter().all(|&b| b == 0x5A),
        "the copy saw {:?}",
        &head[..8]
    );
    let mut tail = vec![0u8; 4096];
    let end = mem_storage::StorageHandle {
        id: dst.id,
        utilization: mem_storage::StorageUtilization {
            offset: BYTES - 4096,
            size: 4096,
        },
    };
    storage.read(&end, &mut tail).unwrap();
    assert!(tail.iter().all(|&b| b == 0x5A));
}
