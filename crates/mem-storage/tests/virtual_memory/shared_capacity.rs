//! Pages and chunks of one device draw on one physical capacity, as
//! `cuMemAlloc` and `cuMemCreate` do on a GPU: a resource and the virtual
//! memory made from it (`virtual_memory()`) never hold more than the
//! device's size together, each is refused with the device's typed
//! out-of-memory when the other fills it, and both report the same free
//! bytes.

use std::sync::Arc;

use mem_storage::{
    DeviceResource, HostResource, Refuser, SimulatedResource, StorageError, StreamId, VirtualMemory,
};

use crate::MIB;

const S: StreamId = StreamId::DEFAULT;

/// Both views of the device agree on free and total bytes.
fn free_is(resource: &dyn DeviceResource, vm: &dyn VirtualMemory, free: u64, total: u64) {
    let pages = resource.mem_info().unwrap();
    let chunks = vm.physical_info().unwrap();
    assert_eq!((pages.free, pages.total), (free, total), "mem_info");
    assert_eq!((chunks.free, chunks.total), (free, total), "physical_info");
}

fn is_device_oom(err: &StorageError, requested: u64, free: u64, total: u64) -> bool {
    matches!(*err, StorageError::OutOfMemory { refused_by: Refuser::Device, requested: r, free: f, total: t, .. }
        if (r, f, t) == (requested, free, total))
}

/// An 8 MiB device with 2 MiB chunks, driven through pages and chunks.
fn pages_and_chunks_share_one_capacity(resource: &dyn DeviceResource, vm: &dyn VirtualMemory) {
    let (total, g) = (8 * MIB, vm.granularity());
    assert_eq!(g, 2 * MIB);
    free_is(resource, vm, total, total);

    let page = resource.allocate(4 * MIB, S).unwrap();
    free_is(resource, vm, 4 * MIB, total);
    let chunks = [vm.create_chunk(g).unwrap(), vm.create_chunk(g).unwrap()];
    free_is(resource, vm, 0, total);

    // Full: a chunk is refused because of the page, a page because of
    // the chunks — each with the device's numbers, and nothing changes.
    let err = vm.create_chunk(g).unwrap_err();
    assert!(is_device_oom(&err, g, 0, total), "{err}");
    let err = resource.allocate(256, S).unwrap_err();
    assert!(is_device_oom(&err, 256, 0, total), "{err}");
    assert_eq!(vm.vm_stats().physical_bytes, 2 * g);
    free_is(resource, vm, 0, total);

    // A chunk given back makes room for a page, and a page for a chunk.
    vm.release_chunk(chunks[0]).unwrap();
    free_is(resource, vm, g, total);
    let small = resource.allocate(g, S).unwrap();
    let err = vm.create_chunk(g).unwrap_err();
    assert!(is_device_oom(&err, g, 0, total), "{err}");
    resource.deallocate(page, 4 * MIB, S).unwrap();
    let more = [vm.create_chunk(g).unwrap(), vm.create_chunk(g).unwrap()];
    free_is(resource, vm, 0, total);

    // Larger than the whole device is TooBig on either side.
    assert!(matches!(
        vm.create_chunk(2 * total).unwrap_err(),
        StorageError::TooBig { refused_by: Refuser::Device, max, .. } if max == total
    ));
    assert!(matches!(
        resource.allocate(2 * total, S).unwrap_err(),
        StorageError::TooBig { refused_by: Refuser::Device, max, .. } if max == total
    ));

    resource.deallocate(small, g, S).unwrap();
    for c in [chunks[1], more[0], more[1]] {
        vm.release_chunk(c).unwrap();
    }
    free_is(resource, vm, total, total);
    assert!(vm.vm_stats().is_idle());
}

#[test]
fn a_simulated_device_holds_its_size_in_pages_and_chunks_together() {
    let sim = SimulatedResource::new(8 * MIB);
    let vm = sim.virtual_memory();
    pages_and_chunks_share_one_capacity(&sim, &vm);
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_host_device_holds_its_capacity_in_pages_and_chunks_together() {
    let host = HostResource::with_capacity(8 * MIB);
    let vm = host.virtual_memory().unwrap();
    pages_and_chunks_share_one_capacity(&host, &vm);
}

#[test]
fn pages_and_chunks_racing_on_two_threads_never_pass_the_device_size() {
    let total = 256 * MIB;
    let sim = Arc::new(SimulatedResource::new(total));
    let vm = Arc::new(sim.virtual_memory());
    let pages = {
        let sim = Arc::clone(&sim);
        std::thread::spawn(move || {
            let mut held = 0;
            while sim.allocate(MIB, S).is_ok() {
                held += MIB;
            }
            held
        })
    };
    let chunks = {
        let vm = Arc::clone(&vm);
        std::thread::spawn(move || {
            let mut held = 0;
            while vm.create_chunk(2 * MIB).is_ok() {
                held += 2 * MIB;
            }
            held
        })
    };
    let (pages, chunks) = (pages.join().unwrap(), chunks.join().unwrap());
    // Each stopped at its first refusal, so the device is (nearly) full:
    // never more than its size, and less only by under one chunk.
    assert!(pages + chunks <= total, "{pages} + {chunks} > {total}");
    assert!(pages + chunks > total - 2 * MIB, "{pages} + {chunks}");
    assert_eq!(sim.physical_memory().used(), pages + chunks);
    assert_eq!(vm.vm_stats().physical_bytes, chunks);
}
