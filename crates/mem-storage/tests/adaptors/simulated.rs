use mem_storage::units::GIB;
use mem_storage::{
    ComputeStorage, DeviceResource, SimulatedResource, SimulatedStorage, StorageError, StreamId,
};

const S: StreamId = StreamId::DEFAULT;

#[test]
fn an_eighty_gib_device_holds_eighty_gib_and_refuses_the_next_byte() {
    let sim = SimulatedResource::new(80 * GIB);
    let pages: Vec<_> = (0..80).map(|_| sim.allocate(GIB, S).unwrap()).collect();
    assert_eq!(sim.mem_info().unwrap().free, 0);
    match sim.allocate(1, S).unwrap_err() {
        StorageError::OutOfMemory {
            requested,
            free,
            total,
            ..
        } => assert_eq!((requested, free, total), (1, 0, 80 * GIB)),
        other => panic!("expected OutOfMemory, got {other}"),
    }
    sim.deallocate(pages[3], GIB, S).unwrap();
    let again = sim
        .allocate(GIB, S)
        .expect("a freed GiB is available again");
    assert!(pages.iter().all(|&p| p != again || p == pages[3]));
    assert!(
        matches!(sim.allocate(81 * GIB, S), Err(StorageError::TooBig { max, .. }) if max == 80 * GIB)
    );
}

#[test]
fn the_simulated_device_holds_no_bytes_but_checks_every_range() {
    let sim = SimulatedResource::new(GIB);
    assert!(!sim.holds_memory());
    let a = sim.allocate(1024, S).unwrap();
    assert!(matches!(
        sim.write(a, &[1], S),
        Err(StorageError::Unsupported {
            operation: "write",
            ..
        })
    ));
    assert!(matches!(
        sim.read(a, &mut [0], S),
        Err(StorageError::Unsupported {
            operation: "read",
            ..
        })
    ));
    sim.fill(a, 0, 1024, S).unwrap();
    sim.copy(a, a, 1024, S).unwrap();
    assert!(matches!(
        sim.fill(a, 0, 1025, S),
        Err(StorageError::UnknownPointer { .. })
    ));
    sim.deallocate(a, 1024, S).unwrap();
}

#[test]
fn a_bad_alignment_or_capacity_is_a_typed_error() {
    for alignment in [0, 3, 1 << 33] {
        assert!(matches!(
            SimulatedResource::with_alignment(GIB, alignment),
            Err(StorageError::InvalidArgument {
                parameter: "alignment",
                ..
            })
        ));
    }
    assert!(SimulatedResource::with_alignment(u64::MAX, 256).is_err());
    let sim = SimulatedResource::with_alignment(GIB, 1 << 21).unwrap();
    let p = sim.allocate(10, S).unwrap();
    let q = sim.allocate(10, S).unwrap();
    assert_eq!((p.0 % (1 << 21), q.0 - p.0), (0, 1 << 21));
    assert_eq!(
        SimulatedResource::new(u64::MAX).capacity(),
        SimulatedResource::max_capacity()
    );
}

#[test]
fn a_replay_of_sixty_gib_live_on_an_eighty_gib_device_leaves_nothing() {
    // 200k page allocations, ~66 GiB live at the end: more than this host
    // has, replayed in a fraction of a second (not timed here).
    let mut storage = SimulatedStorage::simulated(80 * GIB);
    let mut live = Vec::new();
    for i in 0..200_000u64 {
        live.push(storage.alloc(512 << 10).unwrap());
        if i % 3 == 2 {
            let page = live.swap_remove((i as usize * 7) % live.len());
            storage.dealloc(page.id).unwrap();
        }
        if i % 1000 == 0 {
            storage.flush().unwrap();
        }
    }
    assert!(storage.bytes_allocated() > 60 * GIB);
    for page in live.drain(..) {
        storage.dealloc(page.id).unwrap();
    }
    storage.flush().unwrap();
    assert_eq!(storage.bytes_allocated(), 0);
    assert_eq!(storage.resource().live_allocations(), 0);
}
