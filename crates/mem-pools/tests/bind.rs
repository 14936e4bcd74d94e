//! `bind`: handing a reserved slice to another handle, and cursors.

mod common;

use common::*;
use mem_pools::{IoError, MemoryConfiguration};

#[test]
fn bind_hands_the_reserved_memory_to_the_assigned_handle_and_stamps_the_cursor() {
    let mut mm = manager(sliced());
    let assigned = mm.reserve(64).unwrap();
    let follower = assigned.clone();
    let reserved = mm.reserve(2000).unwrap();
    mm.write(reserved.binding(), &pattern(1, 2000)).unwrap();
    let reserved_binding = reserved.binding();
    let view = mm.get_storage(reserved.binding()).unwrap();
    mm.bind(reserved, assigned.clone(), 42).unwrap();
    assert_eq!(mm.get_storage(assigned.binding()).unwrap(), view);
    assert_eq!(
        mm.get_storage(follower.binding()).unwrap(),
        view,
        "every clone follows"
    );
    assert_eq!(assigned.size(), 2000);
    assert_eq!(mm.get_cursor(assigned.binding()).unwrap(), 42);
    let mut out = vec![0; 2000];
    mm.read(assigned.binding(), &mut out).unwrap();
    assert_eq!(out, pattern(1, 2000));
    assert!(matches!(
        mm.get_storage(reserved_binding),
        Err(IoError::StaleBinding { .. })
    ));
    assert_eq!(
        mm.memory_usage().number_allocs,
        1,
        "assigned's old 64 bytes were freed"
    );
}

#[test]
fn bind_with_a_foreign_or_shared_handle_changes_nothing() {
    let mut mm = manager(sliced());
    let mut other = manager(sliced());
    let assigned = mm.reserve(64).unwrap();
    let foreign = other.reserve(64).unwrap();
    let before = mm.get_storage(assigned.binding()).unwrap();
    let err = mm.bind(foreign, assigned.clone(), 1).unwrap_err();
    assert!(matches!(err, IoError::ForeignBinding { .. }), "{err}");
    let reserved = mm.reserve(128).unwrap();
    let kept = reserved.clone();
    let err = mm.bind(reserved, assigned.clone(), 3).unwrap_err();
    assert_eq!(err, IoError::SharedReserved { holders: 2 });
    assert_eq!(mm.get_storage(assigned.binding()).unwrap(), before);
    assert_eq!(mm.get_cursor(kept.binding()).unwrap(), 0);
    assert_eq!(mm.memory_usage().number_allocs, 2);
}

#[test]
fn bind_refuses_to_free_memory_a_captured_graph_holds() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.capture_begin();
    let assigned = mm.reserve(64).unwrap();
    let graph = mm.capture_end();
    let reserved = mm.reserve(128).unwrap();
    let view = mm.get_storage(assigned.binding()).unwrap();
    let err = mm.bind(reserved, assigned.clone(), 1).unwrap_err();
    assert!(matches!(err, IoError::AssignedPinned { size: 64 }), "{err}");
    assert_eq!(mm.get_storage(graph[0].binding()).unwrap(), view);
}

#[test]
fn binding_a_handle_to_itself_only_stamps_the_cursor() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let h = mm.reserve(100).unwrap();
    let view = mm.get_storage(h.binding()).unwrap();
    mm.bind(h.clone(), h.clone(), 9).unwrap();
    assert_eq!(mm.get_storage(h.binding()).unwrap(), view);
    assert_eq!(mm.get_cursor(h.binding()).unwrap(), 9);
    assert_eq!(mm.memory_usage().number_allocs, 1);
}

#[test]
fn bind_would_refuse_answers_as_bind_does_and_keeps_the_handles() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let reserved = mm.reserve(128).unwrap();
    let assigned = mm.reserve(64).unwrap();
    let hold = reserved.clone();
    assert_eq!(
        mm.bind_would_refuse(&reserved, &assigned),
        Some(IoError::SharedReserved { holders: 2 })
    );
    drop(hold);
    assert_eq!(mm.bind_would_refuse(&reserved, &assigned), None);
    assert_eq!(
        mm.bind_would_refuse(&assigned, &assigned),
        None,
        "self-bind"
    );
    mm.bind(reserved, assigned.clone(), 7).unwrap();
    assert_eq!(mm.get_cursor(assigned.binding()).unwrap(), 7);
}

#[test]
fn bind_would_refuse_ignores_the_priming_clone_that_makes_can_mut_false() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let assigned = mm.reserve(64).unwrap();
    mm.capture_begin();
    let reserved = mm.reserve(128).unwrap();
    assert!(!reserved.can_mut(), "the engine retains a priming clone");
    assert_eq!(mm.bind_would_refuse(&reserved, &assigned), None);
    mm.bind(reserved, assigned.clone(), 1).unwrap();
    assert_eq!(mm.capture_end().len(), 1);
}

#[test]
fn bind_would_refuse_names_pinned_assigned_memory_and_foreign_handles() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.capture_begin();
    let assigned = mm.reserve(64).unwrap();
    let pins = mm.capture_end();
    let reserved = mm.reserve(128).unwrap();
    assert_eq!(
        mm.bind_would_refuse(&reserved, &assigned),
        Some(IoError::AssignedPinned { size: 64 })
    );
    drop(pins);
    assert_eq!(
        mm.bind_would_refuse(&reserved, &assigned),
        None,
        "pin ended"
    );
    let mut elsewhere = manager(MemoryConfiguration::SubSlices);
    let foreign = elsewhere.reserve(16).unwrap();
    assert!(matches!(
        mm.bind_would_refuse(&foreign, &assigned),
        Some(IoError::ForeignBinding { .. })
    ));
    mm.bind(reserved, assigned, 0).unwrap();
}

#[test]
fn a_refused_try_bind_gives_both_handles_back_and_frees_nothing() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.capture_begin();
    let assigned = mm.reserve(64).unwrap();
    let pins = mm.capture_end();
    let reserved = mm.reserve(128).unwrap();
    mm.write(reserved.binding(), &pattern(3, 128)).unwrap();
    let view = mm.get_storage(reserved.binding()).unwrap();
    mm.drain_drops();
    let before = mm.memory_usage();
    let refused = mm.try_bind(reserved, assigned, 5).unwrap_err();
    assert_eq!(refused.error, IoError::AssignedPinned { size: 64 });
    let (reserved, assigned) = refused.into_handles();
    mm.drain_drops();
    assert_eq!(mm.memory_usage(), before, "nothing was freed");
    assert_eq!(mm.get_storage(reserved.binding()).unwrap(), view);
    let mut out = vec![0; 128];
    mm.read(reserved.binding(), &mut out).unwrap();
    assert_eq!(out, pattern(3, 128));
    assert_eq!(mm.get_cursor(assigned.binding()).unwrap(), 0);
    drop(pins);
    mm.try_bind(reserved, assigned.clone(), 5).unwrap();
    assert_eq!(mm.get_storage(assigned.binding()).unwrap(), view);
    assert_eq!(mm.get_cursor(assigned.binding()).unwrap(), 5);
}

#[test]
fn a_refused_try_bind_converts_into_its_io_error_with_question_mark() {
    fn bind_or_io(
        mm: &mut mem_pools::MemoryManagement<mem_storage::HostStorage>,
        r: mem_pools::ManagedMemoryHandle,
        a: mem_pools::ManagedMemoryHandle,
    ) -> Result<(), IoError> {
        mm.try_bind(r, a, 1)?;
        Ok(())
    }
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let reserved = mm.reserve(128).unwrap();
    let assigned = mm.reserve(64).unwrap();
    let kept = reserved.clone();
    let err = bind_or_io(&mut mm, reserved, assigned).unwrap_err();
    assert_eq!(err, IoError::SharedReserved { holders: 2 });
    assert!(mm.get_storage(kept.binding()).is_ok());
}

#[test]
fn a_refused_plain_bind_drops_its_handles_and_the_reserved_memory_is_freed() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    mm.capture_begin();
    let assigned = mm.reserve(64).unwrap();
    let _pins = mm.capture_end();
    let reserved = mm.reserve(128).unwrap();
    let binding = reserved.binding();
    let err = mm.bind(reserved, assigned, 1).unwrap_err();
    assert_eq!(err, IoError::AssignedPinned { size: 64 });
    assert!(
        matches!(mm.get_storage(binding), Err(IoError::StaleBinding { .. })),
        "documented: bind consumed the reserved handle's last holder"
    );
}

#[test]
fn a_bind_that_keeps_the_old_memory_hands_it_back_as_a_live_allocation() {
    let mut mm = manager(sliced());
    let assigned = mm.reserve(64).unwrap();
    mm.write(assigned.binding(), &pattern(3, 64)).unwrap();
    let old_view = mm.get_storage(assigned.binding()).unwrap();
    let reserved = mm.reserve(2000).unwrap();
    let view = mm.get_storage(reserved.binding()).unwrap();
    let kept = mm
        .try_bind_keeping(reserved, assigned.clone(), 7)
        .unwrap()
        .expect("two allocations: the old memory comes back");
    assert_eq!(mm.get_storage(assigned.binding()).unwrap(), view);
    assert_eq!(mm.get_storage(kept.binding()).unwrap(), old_view);
    assert_eq!(kept.size(), 64);
    let mut out = vec![0; 64];
    mm.read(kept.binding(), &mut out).unwrap();
    assert_eq!(out, pattern(3, 64), "its bytes are untouched");
    assert_eq!(mm.memory_usage().number_allocs, 2, "nothing freed yet");
    let next = mm.reserve(64).unwrap();
    assert_ne!(mm.get_storage(next.binding()).unwrap(), old_view);
    drop(kept);
    drop(next);
    mm.cleanup(false);
    assert_eq!(mm.memory_usage().number_allocs, 1, "dropping it frees it");
}

#[test]
fn a_refused_keeping_bind_hands_both_handles_back_unchanged() {
    let mut mm = manager(sliced());
    let assigned = mm.reserve(64).unwrap();
    let reserved = mm.reserve(128).unwrap();
    let extra = reserved.clone();
    let before = mm.get_storage(assigned.binding()).unwrap();
    let refused = mm
        .try_bind_keeping(reserved, assigned.clone(), 1)
        .unwrap_err();
    assert_eq!(refused.error, IoError::SharedReserved { holders: 2 });
    assert_eq!(refused.reserved.binding(), extra.binding());
    assert_eq!(mm.get_storage(assigned.binding()).unwrap(), before);
    assert_eq!(mm.memory_usage().number_allocs, 2);
}

#[test]
fn a_keeping_bind_of_a_handle_to_itself_only_stamps() {
    let mut mm = manager(sliced());
    let h = mm.reserve(64).unwrap();
    let kept = mm.try_bind_keeping(h.clone(), h.clone(), 5).unwrap();
    assert!(kept.is_none());
    assert_eq!(mm.get_cursor(h.binding()).unwrap(), 5);
}

#[test]
fn a_slice_reused_after_a_bound_allocation_is_freed_reads_cursor_zero() {
    let mut mm = manager(MemoryConfiguration::SubSlices);
    let h = mm.reserve(100).unwrap();
    let view = mm.get_storage(h.binding()).unwrap();
    mm.bind(h.clone(), h.clone(), 9).unwrap();
    drop(h);
    let again = mm.reserve(100).unwrap();
    assert_eq!(
        mm.get_storage(again.binding()).unwrap(),
        view,
        "the same slice serves the next reservation"
    );
    assert_eq!(mm.get_cursor(again.binding()).unwrap(), 0);
    mm.bind(again.clone(), again.clone(), 4).unwrap();
    assert_eq!(mm.get_cursor(again.binding()).unwrap(), 4);
}
