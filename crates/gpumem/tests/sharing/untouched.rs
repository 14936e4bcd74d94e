//! Relocation, reclaim, compaction of the pools and sleep never move or
//! unmap a shareable buffer: it lies outside every pool. An importer (a
//! second device in this process) keeps seeing the same bytes through
//! each of them.

use gpumem::prelude::*;

use crate::{pattern, sharing_device};

#[test]
fn relocation_reclaim_and_sleep_leave_an_exported_buffer_where_it_is() {
    let device = sharing_device();
    let stream = device.default_stream();
    // Pooled memory for the passes to work on: some freed, some live.
    let live: Vec<_> = (0..4).map(|_| stream.reserve(3 * MIB).unwrap()).collect();
    let freed: Vec<_> = (0..4).map(|_| stream.reserve(3 * MIB).unwrap()).collect();
    let len = 4 * MIB;
    let buffer = stream.reserve_shareable(len).unwrap();
    let data: Vec<u8> = (0..len as usize).map(pattern).collect();
    buffer.write(0, &data).unwrap();
    let importer = Device::host().ignore_env().build().unwrap();
    let view = importer.import(stream.export(&buffer).unwrap()).unwrap();
    let (ptr, view_ptr) = (buffer.device_ptr(), view.device_ptr());
    drop(freed);

    let check = |when: &str| {
        let mut back = vec![0u8; len as usize];
        view.read(0, &mut back).unwrap();
        assert!(back == data, "the importer's bytes changed after {when}");
        buffer.read(0, &mut back).unwrap();
        assert!(back == data, "the exporter's bytes changed after {when}");
        assert_eq!((buffer.device_ptr(), view.device_ptr()), (ptr, view_ptr));
    };
    device.relocate(RelocationReason::Explicit).unwrap();
    check("relocation");
    device.reclaim().unwrap();
    check("reclaim");
    stream.cleanup();
    check("cleanup");
    device.sleep(SleepContents::Discard).unwrap();
    check("sleep");
    device.wake().unwrap();
    check("wake");
    drop(live);
}
