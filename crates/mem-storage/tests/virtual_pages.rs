//! Virtual pages of a `ResourceStorage`: what arena pools are carved from.

use std::sync::Arc;

use mem_storage::{
    ComputeStorage, HostResource, HostVirtualMemory, ResourceStorage, SimulatedResource,
    SimulatedVirtualMemory, StorageError, StorageHandle, StorageUtilization, VirtualMemory,
};

const G: u64 = 2 << 20;

fn view(page: &StorageHandle, offset: u64, size: u64) -> StorageHandle {
    StorageHandle {
        id: page.id,
        utilization: StorageUtilization { offset, size },
    }
}

fn host() -> (Arc<HostVirtualMemory>, ResourceStorage<HostResource>) {
    let vm = Arc::new(HostVirtualMemory::with_capacity(64 * G).unwrap());
    let storage = ResourceStorage::new(HostResource::new()).with_virtual_memory(vm.clone());
    (vm, storage)
}

#[test]
#[cfg_attr(miri, ignore)]
fn bytes_written_through_a_view_live_in_the_chunk_mapped_under_it() {
    let (vm, mut s) = host();
    assert_eq!(s.chunk_granularity(), Some(G));
    let page = s.alloc_virtual(10 * G).unwrap();
    assert_eq!(page.size(), 10 * G);
    assert_eq!(s.bytes_allocated(), 0, "a virtual page holds no memory");
    assert_eq!(s.virtual_bytes(), 10 * G);
    let (a, b) = (s.create_chunk().unwrap(), s.create_chunk().unwrap());
    s.map_chunk(page.id, 3 * G, a).unwrap();
    s.map_chunk(page.id, 4 * G, b).unwrap();
    assert_eq!(s.bytes_allocated(), 2 * G);
    // A view spanning the two chunks.
    let across = view(&page, 4 * G - 8, 16);
    s.write(&across, &[7; 16]).unwrap();
    let mut out = [0; 16];
    s.read(&across, &mut out).unwrap();
    assert_eq!(out, [7; 16]);
    // Unmapped: a typed error, never a fault.
    let err = s.read(&view(&page, 0, 16), &mut out).unwrap_err();
    assert!(matches!(err, StorageError::UnmappedAddress { .. }), "{err}");
    // Moved: the chunk keeps its bytes wherever it is mapped next.
    let moved = s.unmap_chunk(page.id, 4 * G).unwrap();
    assert_eq!(moved, b);
    s.map_chunk(page.id, 0, b).unwrap();
    let mut head = [0; 8];
    s.read(&view(&page, 0, 8), &mut head).unwrap();
    assert_eq!(head, [7; 8]);
    // The page goes back only once nothing is mapped in it.
    assert!(matches!(
        s.dealloc(page.id),
        Err(StorageError::RangeInUse { .. })
    ));
    drop(s);
    let stats = vm.vm_stats();
    assert_eq!(
        (
            stats.physical_bytes,
            stats.virtual_bytes,
            stats.mapped_bytes
        ),
        (0, 0, 0)
    );
}

#[test]
fn a_dropped_storage_gives_back_only_what_it_made_of_a_shared_virtual_memory() {
    let vm = Arc::new(SimulatedVirtualMemory::new(80 << 30));
    let mut one =
        ResourceStorage::new(SimulatedResource::new(1 << 30)).with_virtual_memory(vm.clone());
    let mut two =
        ResourceStorage::new(SimulatedResource::new(1 << 30)).with_virtual_memory(vm.clone());
    let p1 = one.alloc_virtual(64 << 30).unwrap();
    let p2 = two.alloc_virtual(G).unwrap();
    let c1 = one.create_chunk().unwrap();
    one.map_chunk(p1.id, 0, c1).unwrap();
    let c2 = two.create_chunk().unwrap();
    two.map_chunk(p2.id, 0, c2).unwrap();
    assert!(
        matches!(
            two.release_chunk(c1),
            Err(StorageError::UnknownChunk { .. })
        ),
        "a storage releases only its own chunks"
    );
    drop(one);
    let stats = vm.vm_stats();
    assert_eq!(
        (
            stats.physical_bytes,
            stats.mapped_bytes,
            stats.virtual_bytes
        ),
        (G, G, G)
    );
    drop(two);
    assert!(vm.vm_stats().is_idle());
}

#[test]
fn a_storage_without_virtual_memory_says_so() {
    let mut s = ResourceStorage::new(SimulatedResource::new(1 << 30));
    assert_eq!(s.chunk_granularity(), None);
    assert!(matches!(
        s.alloc_virtual(G),
        Err(StorageError::Unsupported { .. })
    ));
    assert!(matches!(
        s.create_chunk(),
        Err(StorageError::Unsupported { .. })
    ));
}

#[test]
fn a_bad_map_or_unmap_is_a_typed_error_and_changes_nothing() {
    let vm = Arc::new(SimulatedVirtualMemory::new(80 << 30));
    let mut s =
        ResourceStorage::new(SimulatedResource::new(1 << 30)).with_virtual_memory(vm.clone());
    let page = s.alloc_virtual(8 * G).unwrap();
    let chunk = s.create_chunk().unwrap();
    s.map_chunk(page.id, G, chunk).unwrap();
    for offset in [G + 4096, 0, 2 * G, 100 * G] {
        assert!(
            matches!(
                s.unmap_chunk(page.id, offset),
                Err(StorageError::NotMapped { at, .. }) if at == offset
            ),
            "nothing mapped at {offset}"
        );
    }
    let gone = mem_storage::StorageId(page.id.0 + 100);
    assert!(matches!(
        s.unmap_chunk(gone, G),
        Err(StorageError::UnknownId { .. })
    ));
    assert!(matches!(
        s.map_chunk(gone, 0, chunk),
        Err(StorageError::UnknownId { .. })
    ));
    let foreign = vm.create_chunk(G).unwrap();
    assert!(matches!(
        s.map_chunk(page.id, 0, foreign),
        Err(StorageError::UnknownChunk { .. })
    ));
    assert!(matches!(
        s.dealloc(page.id),
        Err(StorageError::RangeInUse {
            mapped_chunks: 1,
            mapped_bytes: G,
            ..
        })
    ));
    let stats = vm.vm_stats();
    assert_eq!((stats.maps, stats.unmaps, stats.mapped_bytes), (1, 0, G));
    assert_eq!(s.unmap_chunk(page.id, G).unwrap(), chunk);
    s.dealloc(page.id).unwrap();
    vm.release_chunk(foreign).unwrap();
}

#[test]
fn a_dropped_storage_unmaps_adjacent_and_lone_chunks_and_leaves_the_memory_idle() {
    let vm = Arc::new(SimulatedVirtualMemory::new(80 << 30));
    let mut s =
        ResourceStorage::new(SimulatedResource::new(1 << 30)).with_virtual_memory(vm.clone());
    let (a, b) = (
        s.alloc_virtual(16 * G).unwrap(),
        s.alloc_virtual(4 * G).unwrap(),
    );
    for (page, granule) in [
        (a.id, 0),
        (a.id, 1),
        (a.id, 2),
        (a.id, 5),
        (a.id, 7),
        (a.id, 8),
        (b.id, 3),
    ] {
        let chunk = s.create_chunk().unwrap();
        s.map_chunk(page, granule * G, chunk).unwrap();
    }
    let _idle = s.create_chunk().unwrap();
    assert_eq!(s.bytes_allocated(), 8 * G);
    drop(s);
    let stats = vm.vm_stats();
    assert!(stats.is_idle(), "{stats:?}");
    assert_eq!(
        (stats.unmaps, stats.chunks_released, stats.refused_calls),
        (7, 8, 0)
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_chunk_of_several_granules_is_one_create_one_map_and_goes_only_whole() {
    let (vm, mut s) = host();
    let page = s.alloc_virtual(10 * G).unwrap();
    let big = s.create_chunk_of(3 * G).unwrap();
    assert_eq!(s.bytes_allocated(), 3 * G);
    s.map_chunk(page.id, 2 * G, big).unwrap();
    let stats = vm.vm_stats();
    assert_eq!((stats.chunks_created, stats.maps), (1, 1));
    // Bytes reach across its granules.
    let across = view(&page, 3 * G - 8, 16);
    s.write(&across, &[9; 16]).unwrap();
    // Its mapping starts at granule 2: an unmap anywhere else is refused.
    let err = s.unmap_chunk(page.id, 3 * G).unwrap_err();
    assert!(matches!(err, StorageError::NotMapped { .. }), "{err}");
    assert!(matches!(
        s.dealloc(page.id),
        Err(StorageError::RangeInUse { mapped_bytes, .. }) if mapped_bytes == 3 * G
    ));
    assert_eq!(s.unmap_chunk(page.id, 2 * G).unwrap(), big);
    assert_eq!(vm.vm_stats().mapped_bytes, 0, "all three granules went");
    s.release_chunk(big).unwrap();
    assert_eq!(s.bytes_allocated(), 0);
    // Not a multiple of the granularity: the virtual memory refuses it.
    assert!(s.create_chunk_of(G + 1).is_err());
    s.dealloc(page.id).unwrap();
    drop(s);
    assert!(vm.vm_stats().is_idle());
}
