//! Sizes 0, 1, u64::MAX and u64::MAX − alignment at every layer: the pool
//! engine (Auto and Persistent), the budgets, the storage and the device.
//! Each is either served (and then holds its bytes) or refused with the
//! typed error that names it, and a refusal changes nothing.

use mem_budget::{AllocTag, BudgetError, BudgetScope};
use mem_pools::{IoError, MemoryAllocationMode};
use mem_reliability::{Limits, Op, World, props};
use mem_storage::{
    ComputeStorage, DeviceResource, HostResource, HostStorage, StorageError, StreamId,
};

const ALIGN: u64 = 256;
const EDGES: [u64; 4] = [0, 1, u64::MAX, u64::MAX - ALIGN];

#[test]
fn edge_sizes_through_the_model_in_both_modes_keep_every_invariant() {
    let mut world = World::new(Limits::default());
    for persistent in [false, true] {
        world
            .step(Op::Mode {
                stream: 0,
                persistent,
            })
            .unwrap();
        for size in EDGES {
            world.step(Op::Reserve { stream: 0, size }).unwrap();
        }
    }
    // 0 and 1 were served twice each; both huge sizes were refused twice.
    assert_eq!(world.model().entries.len(), 4);
    assert_eq!(world.summary().refusals, 4);
    world.finish().unwrap();
}

#[test]
fn a_zero_byte_reservation_is_a_live_empty_allocation() {
    let mut world = World::new(Limits::default());
    let handle = world.manager(0).reserve(0).unwrap();
    assert_eq!(handle.size(), 0);
    let view = world.manager(0).get_storage(handle.binding()).unwrap();
    assert_eq!(view.size(), 0);
    world.manager(0).write(handle.binding(), &[]).unwrap();
    assert!(matches!(
        world.manager(0).write(handle.binding(), &[1]),
        Err(IoError::OutOfBounds {
            end: 1,
            size: 0,
            ..
        })
    ));
    assert_eq!(world.manager(0).memory_usage().number_allocs, 1);
}

#[test]
fn u64_max_is_too_big_in_auto_mode_and_an_invalid_size_in_persistent_mode() {
    let mut world = World::new(Limits::default());
    let manager = world.manager(0);
    assert!(matches!(
        manager.reserve(u64::MAX),
        Err(IoError::BufferTooBig {
            size: u64::MAX,
            max: 262_144
        })
    ));
    manager.mode(MemoryAllocationMode::Persistent);
    assert_eq!(
        manager.reserve(u64::MAX).unwrap_err(),
        IoError::InvalidSize {
            size: u64::MAX,
            alignment: ALIGN
        }
    );
    assert_eq!(manager.memory_usage(), Default::default());
}

#[test]
fn u64_max_minus_alignment_rounds_without_overflow_and_is_refused_by_the_device() {
    let mut world = World::new(Limits::default());
    let manager = world.manager(0);
    manager.mode(MemoryAllocationMode::Persistent);
    let err = manager.reserve(u64::MAX - ALIGN).unwrap_err();
    assert!(
        matches!(
            err,
            IoError::Storage(StorageError::OutOfMemory { .. } | StorageError::TooBig { .. })
                | IoError::BufferTooBig { .. }
        ),
        "{err}"
    );
    assert_eq!(manager.memory_usage(), Default::default());
    assert_eq!(world.device().tracking().outstanding_count(), 0);
    assert_eq!(world.device().global().charged(), 0);
}

#[test]
fn one_byte_takes_one_alignment_unit_and_keeps_its_byte() {
    let mut world = World::new(Limits::default());
    let manager = world.manager(0);
    let a = manager.reserve(1).unwrap();
    let b = manager.reserve(1).unwrap();
    manager.write(a.binding(), &[7]).unwrap();
    manager.write(b.binding(), &[9]).unwrap();
    let (va, vb) = (
        manager.get_storage(a.binding()).unwrap(),
        manager.get_storage(b.binding()).unwrap(),
    );
    assert_eq!(va.offset() % props().alignment, 0);
    assert!(va.id != vb.id || va.offset().abs_diff(vb.offset()) >= ALIGN);
    let mut out = [0u8; 1];
    manager.read(a.binding(), &mut out).unwrap();
    assert_eq!(out, [7]);
    let usage = manager.memory_usage();
    assert_eq!(
        (usage.bytes_in_use, usage.bytes_padding),
        (2, 2 * (ALIGN - 1))
    );
}

#[test]
fn budgets_refuse_edge_sizes_with_their_numbers_and_claim_nothing() {
    let world = World::new(Limits::default());
    let (parent, overlay) = world.budgets();
    for bytes in [u64::MAX, u64::MAX - ALIGN] {
        match parent.reserve_bytes(bytes) {
            Err(BudgetError::ResourceExhausted {
                requested, which, ..
            }) => {
                assert_eq!(requested, bytes);
                assert_eq!(which, BudgetScope::Global);
            }
            other => panic!("reserve_bytes({bytes}) gave {other:?}"),
        }
        let len = usize::try_from(bytes).unwrap();
        assert!(matches!(
            overlay.alloc_raw(len, AllocTag::SCRATCH),
            Err(BudgetError::ResourceExhausted {
                which: BudgetScope::Local,
                ..
            })
        ));
    }
    assert!(matches!(
        parent.alloc::<u64>(usize::MAX),
        Err(BudgetError::SizeOverflow {
            len: usize::MAX,
            element_bytes: 8
        })
    ));
    let zero = parent.alloc_raw(0, AllocTag::SCRATCH).unwrap();
    let one = overlay.alloc_raw(1, AllocTag::SCRATCH).unwrap();
    one.write(&[5]).unwrap();
    assert_ne!(zero.ptr(), one.ptr());
    assert_eq!(parent.allocated_bytes(), 1);
    drop((zero, one));
    assert_eq!(parent.allocated_bytes(), 0);
    assert_eq!(world.device().global().charged(), 0);
    assert_eq!(world.device().tracking().outstanding_count(), 0);
}

#[test]
fn the_host_device_and_its_storage_refuse_impossible_sizes_and_serve_empty_ones() {
    let host = HostResource::with_capacity(1 << 20);
    for bytes in [u64::MAX, u64::MAX - ALIGN, (1 << 20) + 1] {
        assert!(
            matches!(
                host.allocate(bytes, StreamId::DEFAULT),
                Err(StorageError::TooBig { requested, .. }) if requested == bytes
            ),
            "{bytes}"
        );
    }
    let a = host.allocate(0, StreamId::DEFAULT).unwrap();
    let b = host.allocate(0, StreamId::DEFAULT).unwrap();
    assert_ne!(a, b, "zero-byte allocations get unique addresses");
    assert_eq!(a.0 % host.alignment(), 0);
    host.deallocate(a, 0, StreamId::DEFAULT).unwrap();
    host.deallocate(b, 0, StreamId::DEFAULT).unwrap();
    let mut storage = HostStorage::new(host);
    assert!(storage.alloc(u64::MAX).is_err());
    assert_eq!(storage.bytes_allocated(), 0);
    let page = storage.alloc(1).unwrap();
    storage.write(&page, &[3]).unwrap();
    assert!(storage.write(&page, &[3, 4]).is_err());
    storage.dealloc(page.id).unwrap();
    storage.flush().unwrap();
    assert_eq!(storage.bytes_allocated(), 0);
}

#[test]
fn a_request_larger_than_the_whole_global_budget_is_too_big_never_retryable() {
    let world = World::new(Limits::default());
    let limit = Limits::default().global;
    let storage = world.device().storage(0);
    for bytes in [limit + 1, u64::MAX - ALIGN, u64::MAX] {
        let err = storage
            .resource()
            .allocate(bytes, StreamId::DEFAULT)
            .unwrap_err();
        assert!(
            matches!(err, StorageError::TooBig { requested, max, .. } if requested == bytes && max == limit),
            "{bytes}: {err:?}"
        );
    }
    assert_eq!(world.device().global().charged(), 0);
}
