//! CubeCL's own unit tests of `MemoryManagement` (cubecl-server
//! 0.12.0-pre.1, `memory_manage.rs`), rewritten against the adapter: the
//! ones about behaviour, with the same assertions where they hold for any
//! layout. The ones that assert CubeCL's own pool layout are listed in the
//! crate docs with the reason each does not apply.

mod common;

use common::*;
use cubecl_ir::MemoryDeviceProperties;
use cubecl_server::memory_management::{
    Cleanup, ManagedMemoryHandle, MemoryAllocationMode, MemoryConfiguration, MemoryPoolKind,
    PageUpdate,
};
use cubecl_server::server::IoError;
use gpumem_cubecl::MemoryManagement;

fn reserve(memory: &mut MemoryManagement<HostStorage>, size: u64) -> ManagedMemoryHandle {
    memory
        .reserve(size, PageUpdate::Allow, &mut graph())
        .unwrap()
}

#[test]
fn a_near_page_sized_allocation_goes_to_a_pool_whose_pages_grow() {
    let mut memory = adaptive();
    let _near = reserve(&mut memory, 7 * MIB);
    let served = memory
        .memory_report()
        .dynamic
        .into_iter()
        .find(|pool| pool.largest_alloc == 7 * MIB)
        .expect("some pool served the allocation");
    assert!(
        matches!(served.kind, MemoryPoolKind::Adaptive { .. }),
        "served by {:?}",
        served.kind
    );
}

fn handle_mutability(mut memory: MemoryManagement<HostStorage>) {
    let handle = reserve(&mut memory, 10);
    let other_ref = handle.clone();
    assert!(!handle.can_mut(), "Handle can't be mut when multiple ref.");
    drop(other_ref);
    assert!(handle.can_mut(), "Handle should be mut when only one ref.");
}

#[test]
fn a_handle_can_be_updated_in_place_only_while_it_has_one_holder() {
    handle_mutability(adaptive());
    handle_mutability(exclusive());
}

#[test]
fn usage_after_a_drop_and_the_same_reservation_again_is_unchanged() {
    let mut memory = adaptive();
    let handle = reserve(&mut memory, 100);
    let usage = memory.memory_report().usage();
    assert_eq!(usage.bytes_in_use, 100);
    drop(handle);
    let _handle = reserve(&mut memory, 100);
    assert_eq!(memory.memory_report().usage(), usage);
}

#[test]
fn a_binding_whose_descriptor_was_never_allocated_is_not_found() {
    let mut memory = adaptive();
    let _live = reserve(&mut memory, 512);
    let binding = ManagedMemoryHandle::new().binding();
    assert!(matches!(
        memory.get_cursor(binding),
        Err(IoError::NotFound { .. })
    ));
}

#[test]
fn a_stale_reserved_descriptor_is_not_found_after_bind() {
    let mut memory = adaptive();
    let reserved = reserve(&mut memory, 512);
    let stale = reserved.clone();
    let assigned = ManagedMemoryHandle::new();
    let assigned_binding = assigned.clone().binding();
    memory.bind(reserved, assigned, 0, &mut graph()).unwrap();
    assert!(matches!(
        memory.get_cursor(stale.binding()),
        Err(IoError::NotFound { .. })
    ));
    assert!(memory.get_cursor(assigned_binding).is_ok());
}

#[test]
fn a_held_binding_survives_an_explicit_cleanup_that_frees_its_neighbours() {
    let mut memory = exclusive();
    let handle_a = reserve(&mut memory, 1024);
    let handle_b = reserve(&mut memory, 1024);
    let handle_c = reserve(&mut memory, 1024);
    let binding_b = handle_b.binding();
    let reserved = memory.memory_report().usage().bytes_reserved;
    drop(handle_a);
    drop(handle_c);
    memory.cleanup(Cleanup::Explicit, &mut graph());
    assert!(memory.get_cursor(binding_b.clone()).is_ok());
    assert!(memory.get_storage(binding_b).is_ok());
    assert!(memory.memory_report().usage().bytes_reserved < reserved);
}

#[test]
fn persistent_windows_nest() {
    let mut memory = adaptive();
    memory.mode(MemoryAllocationMode::Persistent); // the load's window
    memory.mode(MemoryAllocationMode::Persistent); // one parameter's window
    memory.mode(MemoryAllocationMode::Auto); // that parameter is done
    let weight = reserve(&mut memory, 1024);
    let report = memory.memory_report();
    assert_eq!(report.persistent.usage.bytes_in_use, 1024);
    let dynamic_peak = |memory: &MemoryManagement<HostStorage>| -> u64 {
        let report = memory.memory_report();
        report.dynamic.iter().map(|pool| pool.pages_peak).sum()
    };
    assert_eq!(
        dynamic_peak(&memory),
        0,
        "nothing leaked into the dynamic pools"
    );
    memory.mode(MemoryAllocationMode::Auto);
    let _transient = reserve(&mut memory, 1024);
    assert_eq!(dynamic_peak(&memory), 1);
    drop(weight);
}

fn two_chunks(mut memory: MemoryManagement<HostStorage>, same_page: bool) {
    let _handle = reserve(&mut memory, 512);
    let one = memory.memory_report().usage().bytes_reserved;
    let _new_handle = reserve(&mut memory, 512);
    let usage = memory.memory_report().usage();
    assert_eq!(usage.number_allocs, 2);
    assert_eq!(usage.bytes_in_use, 1024);
    match same_page {
        true => assert_eq!(usage.bytes_reserved, one, "both on one page"),
        false => assert!(usage.bytes_reserved >= 1024),
    }
}

#[test]
fn two_small_allocations_share_one_page_unless_pages_are_exclusive() {
    two_chunks(adaptive(), true);
    two_chunks(exclusive(), false);
}

fn reuses_storage(mut memory: MemoryManagement<HostStorage>) {
    let handle = reserve(&mut memory, 512);
    let reserved = memory.memory_report().usage().bytes_reserved;
    drop(handle);
    let _new_handle = reserve(&mut memory, 512);
    let usage = memory.memory_report().usage();
    assert_eq!(usage.number_allocs, 1);
    assert_eq!(usage.bytes_in_use, 512);
    assert_eq!(usage.bytes_reserved, reserved);
}

#[test]
fn a_freed_allocation_is_reused_rather_than_a_page_allocated() {
    reuses_storage(adaptive());
    reuses_storage(exclusive());
}

#[test]
fn two_allocations_of_three_quarters_of_a_page_need_two_pages() {
    let mut memory = adaptive();
    let page_size = 2 * MIB;
    let alloc_size = page_size / 4 * 3;
    let _handle = reserve(&mut memory, alloc_size);
    let _new_handle = reserve(&mut memory, alloc_size);
    let usage = memory.memory_report().usage();
    assert_eq!(usage.number_allocs, 2);
    assert_eq!(usage.bytes_in_use, alloc_size * 2);
    assert_eq!(usage.bytes_reserved, page_size * 2);

    let mut memory = exclusive();
    let _handle = reserve(&mut memory, 768);
    let _new_handle = reserve(&mut memory, 768);
    let usage = memory.memory_report().usage();
    assert_eq!((usage.number_allocs, usage.bytes_in_use), (2, 768 * 2));
    assert!(usage.bytes_reserved >= 768 * 2);
}

#[test]
fn a_small_freed_allocation_and_a_larger_one_share_one_page() {
    let mut memory = adaptive();
    let small = reserve(&mut memory, 128 * 1024);
    drop(small);
    let large = reserve(&mut memory, 512 * 1024);
    let usage = memory.memory_report().usage();
    assert_eq!(usage.bytes_reserved, 2 * MIB, "both sizes share one page");
    assert_eq!(usage.number_allocs, 1);
    drop(large);
}

fn reallocate(mut memory: MemoryManagement<HostStorage>, exact: bool) {
    let handles: Vec<_> = (0..5)
        .map(|i| reserve(&mut memory, 1000 * (i + 1)))
        .collect();
    let before = memory.memory_report().usage();
    drop(handles);
    let _new: Vec<_> = (0..5)
        .map(|i| reserve(&mut memory, 1000 * (i + 1)))
        .collect();
    let after = memory.memory_report().usage();
    assert_eq!(before.number_allocs, after.number_allocs);
    assert_eq!(before.bytes_in_use, after.bytes_in_use);
    match exact {
        true => assert_eq!(before.bytes_reserved, after.bytes_reserved),
        false => assert!(before.bytes_reserved >= after.bytes_reserved),
    }
}

#[test]
fn allocating_again_what_was_freed_reserves_no_more() {
    reallocate(adaptive(), false);
    reallocate(exclusive(), true);
}

#[test]
fn freeing_every_other_allocation_and_reallocating_grows_reserved_memory_by_at_most_a_tenth() {
    let mut memory = adaptive();
    let sizes = [50, 1000, 100, 5000, 200, 10000, 300];
    let handles: Vec<_> = sizes
        .iter()
        .map(|&size| reserve(&mut memory, size))
        .collect();
    let before = memory.memory_report().usage();
    for handle in handles.iter().step_by(2) {
        drop(handle.clone());
    }
    for &size in &sizes[0..sizes.len() / 2] {
        reserve(&mut memory, size);
    }
    let after = memory.memory_report().usage();
    assert!(after.bytes_reserved <= (before.bytes_reserved as f64 * 1.1) as u64);
}

#[test]
fn exclusive_pages_count_each_allocation_on_its_own_page() {
    let properties = MemoryDeviceProperties::new(PROPS.max_page_size, 16);
    let mut memory = memory_with(
        HostStorage::default(),
        &properties,
        MemoryConfiguration::ExclusivePages,
    );
    let sizes = [50, 150, 250, 350];
    let _handles = sizes.map(|size| reserve(&mut memory, size));
    let usage = memory.memory_report().usage();
    assert_eq!(usage.bytes_in_use, sizes.iter().sum::<u64>());
    assert_eq!(usage.number_allocs, 4);
}

#[test]
fn metadata_sized_and_workload_sized_allocations_land_in_different_pools() {
    let mut memory = adaptive();
    let _handles = [4096, 4 * MIB].map(|size| reserve(&mut memory, size));
    let report = memory.memory_report();
    let serving = |size: u64| {
        report
            .dynamic
            .iter()
            .position(|pool| pool.largest_alloc == size)
            .expect("a pool served it")
    };
    assert_ne!(serving(4096), serving(4 * MIB));
    assert_eq!(report.usage().bytes_in_use, 4096 + 4 * MIB);
}
