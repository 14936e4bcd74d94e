//! Every public function of the adapter, with CubeCL's semantics, over a
//! fake CubeCL storage on host memory.

mod common;

use common::*;
use cubecl_server::memory_management::{
    Cleanup, ManagedMemoryHandle, MemoryAllocationMode, MemoryConfiguration, PageUpdate,
};
use cubecl_server::server::IoError;

#[test]
fn a_reservation_bound_to_a_client_handle_resolves_through_that_handle_with_its_cursor() {
    let mut memory = adaptive();
    let reserved = memory
        .reserve(1000, PageUpdate::Allow, &mut graph())
        .unwrap();
    let assigned = ManagedMemoryHandle::new();
    memory
        .bind(reserved, assigned.clone(), 7, &mut graph())
        .unwrap();

    assert_eq!(memory.get_cursor(assigned.clone().binding()).unwrap(), 7);
    let storage = memory.get_storage(assigned.clone().binding()).unwrap();
    assert_eq!(storage.size(), 1000);
    let resource = memory.get_resource(assigned.binding(), None, None).unwrap();
    assert_eq!(resource.size, 1000);
}

#[test]
fn the_reserved_handle_goes_stale_once_bound_and_a_fresh_one_was_never_allocated() {
    let mut memory = adaptive();
    let reserved = memory.reserve(64, PageUpdate::Allow, &mut graph()).unwrap();
    let stale = reserved.clone();
    memory
        .bind(reserved, ManagedMemoryHandle::new(), 0, &mut graph())
        .unwrap();

    assert!(matches!(
        memory.get_cursor(stale.binding()),
        Err(IoError::NotFound { .. })
    ));
    assert!(matches!(
        memory.get_storage(ManagedMemoryHandle::new().binding()),
        Err(IoError::NotFound { .. })
    ));
}

#[test]
fn memory_report_is_current_the_moment_a_handle_drops() {
    let mut memory = adaptive();
    let kept = memory
        .reserve(300, PageUpdate::Allow, &mut graph())
        .unwrap();
    let dropped = memory
        .reserve(500, PageUpdate::Allow, &mut graph())
        .unwrap();
    assert_eq!(memory.memory_report().usage().bytes_in_use, 800);

    drop(dropped);
    // No call on the memory in between: the report alone must see the drop.
    let usage = memory.memory_report().usage();
    assert_eq!((usage.number_allocs, usage.bytes_in_use), (1, 300));
    drop(kept);
    assert_eq!(memory.memory_report().usage().number_allocs, 0);
}

#[test]
fn a_dropped_allocation_is_reused_by_the_next_reservation_without_a_new_buffer() {
    let mut memory = adaptive();
    let first = memory
        .reserve(4096, PageUpdate::Allow, &mut graph())
        .unwrap();
    let buffers = memory.storage().allocs;
    let reserved = memory.memory_report().usage().bytes_reserved;
    drop(first);

    let _second = memory
        .reserve(4096, PageUpdate::Allow, &mut graph())
        .unwrap();
    assert_eq!(memory.storage().allocs, buffers);
    assert_eq!(memory.memory_report().usage().bytes_reserved, reserved);
}

#[test]
fn a_forbidden_page_update_serves_held_room_and_refuses_a_new_page() {
    let mut memory = adaptive();
    let _held = memory
        .reserve(1024, PageUpdate::Allow, &mut graph())
        .unwrap();
    let buffers = memory.storage().allocs;

    let fits = memory.reserve(1024, PageUpdate::Forbidden, &mut graph());
    assert!(fits.is_ok(), "room on the page held serves it");
    let needs_page = memory.reserve(16 * MIB, PageUpdate::Forbidden, &mut graph());
    assert!(matches!(
        needs_page,
        Err(IoError::PageUpdateForbidden { size, .. }) if size == 16 * MIB
    ));
    assert_eq!(memory.storage().allocs, buffers, "no buffer was asked for");

    let added = memory.reserve(16 * MIB, PageUpdate::AddOnly, &mut graph());
    assert!(added.is_ok(), "AddOnly may add a page");
    assert_eq!(memory.storage().allocs, buffers + 1);
}

#[test]
fn taint_claims_byte_ranges_that_a_write_releases_and_a_free_sheds() {
    let mut memory = adaptive();
    let mut failures = graph();
    let handle = memory
        .reserve(100, PageUpdate::Allow, &mut failures)
        .unwrap();
    let binding = handle.clone().binding();
    let failure = failures.insert(generic_error("a launch failed"));

    memory.taint(&binding, 0..50, failure, &mut failures);
    assert_eq!(memory.failure(&binding, 10..20), Some(failure));
    assert_eq!(memory.failure(&binding, 50..100), None);
    memory.written(&binding, 0..25, &mut failures);
    assert_eq!(memory.failure(&binding, 0..25), None);
    assert_eq!(memory.failure(&binding, 25..26), Some(failure));
    assert_eq!(failures.len(), 1);

    drop(binding);
    drop(handle);
    memory.cleanup(Cleanup::Periodic, &mut failures);
    assert!(failures.is_empty(), "a freed allocation carries no claim");
}

#[test]
fn binding_a_reservation_releases_the_claims_its_last_allocation_left() {
    let mut memory = adaptive();
    let mut failures = graph();
    let reserved = memory
        .reserve(64, PageUpdate::Allow, &mut failures)
        .unwrap();
    let failure = failures.insert(generic_error("stale"));
    memory.taint(&reserved.clone().binding(), 0..64, failure, &mut failures);
    let assigned = ManagedMemoryHandle::new();
    memory
        .bind(reserved, assigned.clone(), 1, &mut failures)
        .unwrap();
    assert_eq!(memory.failure(&assigned.binding(), 0..64), None);
    assert!(failures.is_empty());
}

#[test]
fn the_storages_out_of_memory_reaches_the_runtime_unchanged() {
    let mut memory = memory_with(
        HostStorage::with_limit(4 * MIB),
        &PROPS,
        MemoryConfiguration::ExclusivePages,
    );
    let _fits = memory
        .reserve(MIB, PageUpdate::Allow, &mut graph())
        .unwrap();
    let refused = memory.reserve(8 * MIB, PageUpdate::Allow, &mut graph());
    assert!(matches!(refused, Err(IoError::OutOfMemory { size, .. }) if size == 8 * MIB));
    let too_big = memory.reserve(1 << 40, PageUpdate::Allow, &mut graph());
    assert!(matches!(too_big, Err(IoError::BufferTooBig { .. })));
}

#[test]
fn get_resource_and_managed_resource_trim_the_offsets_asked_for() {
    let mut memory = adaptive();
    let handle = memory
        .reserve(100, PageUpdate::Allow, &mut graph())
        .unwrap();
    let whole = memory.get_storage(handle.clone().binding()).unwrap();
    let trimmed = memory
        .get_resource(handle.clone().binding(), Some(10), Some(20))
        .unwrap();
    assert_eq!((trimmed.offset, trimmed.size), (whole.offset() + 10, 70));

    let managed = memory
        .managed_resource(handle.clone().binding(), None, None)
        .unwrap();
    drop(handle);
    assert_eq!(
        memory.memory_report().usage().number_allocs,
        1,
        "the managed resource's binding keeps the allocation"
    );
    assert_eq!(managed.resource().size, 100);
}

#[test]
fn bytes_allocated_follows_the_storage_through_an_explicit_cleanup() {
    let mut memory = exclusive();
    assert_eq!(memory.bytes_allocated(), 0);
    let handle = memory
        .reserve(MIB, PageUpdate::Allow, &mut graph())
        .unwrap();
    assert_eq!(
        memory.bytes_allocated(),
        memory.storage().bytes_allocated_now()
    );
    assert!(memory.bytes_allocated() >= MIB);
    drop(handle);
    memory.cleanup(Cleanup::Explicit, &mut graph());
    assert_eq!(memory.bytes_allocated(), 0);
    assert_eq!(memory.memory_report().usage().bytes_reserved, 0);
}

#[test]
fn persistent_and_dedicated_windows_nest_and_route_allocations() {
    let mut memory = adaptive();
    memory.mode(MemoryAllocationMode::Persistent);
    memory.mode(MemoryAllocationMode::Dedicated);
    memory.mode(MemoryAllocationMode::Auto); // the dedicated window closes
    let weight = memory
        .reserve(1024, PageUpdate::Allow, &mut graph())
        .unwrap();
    memory.mode(MemoryAllocationMode::Auto);
    let _activation = memory
        .reserve(1024, PageUpdate::Allow, &mut graph())
        .unwrap();

    let report = memory.memory_report();
    assert_eq!(report.persistent.usage.bytes_in_use, 1024);
    let dynamic: u64 = report.dynamic.iter().map(|p| p.usage.bytes_in_use).sum();
    assert_eq!(dynamic, 1024);
    assert_eq!(report.dedicated.usage.bytes_in_use, 0);
    drop(weight);
}

#[test]
fn the_report_display_and_print_name_the_memory() {
    let mut memory = adaptive();
    let _handle = memory.reserve(10, PageUpdate::Allow, &mut graph()).unwrap();
    memory.print_memory_usage();
    let text = memory.to_string();
    assert!(text.contains("\"test\""), "{text}");
    assert!(format!("{memory:?}").contains("HostStorage"));
}

#[test]
fn the_memory_can_move_to_and_be_shared_with_another_thread_as_cubecls_can() {
    fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<gpumem_cubecl::MemoryManagement<HostStorage>>();
    send_and_sync::<gpumem_cubecl::MemoryManagementOptions>();
    let mut memory = adaptive();
    let handle = memory.reserve(64, PageUpdate::Allow, &mut graph()).unwrap();
    let memory = std::thread::spawn(move || {
        drop(handle);
        memory
    })
    .join()
    .unwrap();
    assert_eq!(memory.memory_report().usage().number_allocs, 0);
}

#[test]
fn a_forbidden_growth_gives_back_no_empty_page() {
    let mut memory = adaptive();
    let first = memory
        .reserve(MIB, PageUpdate::Allow, &mut graph())
        .unwrap();
    drop(first);
    let _sweep = memory.reserve(64, PageUpdate::Allow, &mut graph()).unwrap();
    let reserved = memory.memory_report().usage().bytes_reserved;
    let deallocs = memory.storage().deallocs;

    // Outgrows the 2 MiB pages, which would add a page: refused, and the
    // empty 2 MiB page stays where it was.
    let refused = memory.reserve(3 * MIB, PageUpdate::Forbidden, &mut graph());
    assert!(matches!(refused, Err(IoError::PageUpdateForbidden { .. })));
    assert_eq!(memory.memory_report().usage().bytes_reserved, reserved);
    cubecl_server::storage::ComputeStorage::flush(memory.storage());
    assert_eq!(memory.storage().deallocs, deallocs);
}
