//! Outdated pages and plan → copy → commit.

mod common;

use common::*;
use mem_pools::{
    CopyQueue, IoError, MAX_PAGE_SIZES, RelocationCopyError, StorageCopyQueue, TargetRoom,
};
use mem_storage::{ComputeStorage, HostStorage, StorageError, StorageHandle};

/// A growable pool with one live 10 KiB slice left on a 64 KiB page, then grown.
type Handle = mem_pools::ManagedMemoryHandle;

fn grown() -> (mem_pools::MemoryManagement<HostStorage>, Handle, Handle) {
    let mut mm = manager(growable());
    let old = mm.reserve(10 * KIB).unwrap();
    mm.write(old.binding(), &pattern(9, 10 * KIB as usize))
        .unwrap();
    let big = mm.reserve(100 * KIB).unwrap(); // 64 KiB pages → 128 KiB
    (mm, old, big)
}

#[test]
fn growing_the_page_size_leaves_older_pages_outdated_and_serving_nothing() {
    let (mut mm, old, _big_mm) = grown();
    assert!(mm.has_outdated());
    let state = mm.relocation_state();
    assert_eq!(state.shape.outdated_pages, 1);
    assert_eq!(state.next_page_size, 128 * KIB);
    let old_page = mm.get_storage(old.binding()).unwrap().id;
    let small = mm.reserve(KIB).unwrap();
    assert_ne!(mm.get_storage(small.binding()).unwrap().id, old_page);
}

#[test]
fn an_outdated_page_is_freed_as_soon_as_it_empties() {
    let (mut mm, old, _big_mm) = grown();
    drop(old);
    mm.cleanup(false);
    assert!(!mm.has_outdated());
    assert_eq!(mm.memory_usage().bytes_reserved, 128 * KIB);
}

#[test]
fn a_relocation_moves_live_bytes_and_every_handle_and_binding_follows() {
    let (mut mm, old, _big_mm) = grown();
    let binding = old.binding();
    let clone = old.clone();
    let plan = mm.plan_relocation(TargetRoom::Held);
    assert_eq!((plan.moves(), plan.pages(), plan.bytes()), (1, 1, 10 * KIB));
    let landed = mm.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    let outcome = mm.commit_relocation(landed).unwrap();
    assert_eq!(outcome.moved_slices, 1);
    assert_eq!((outcome.pages_freed, outcome.bytes_freed), (1, 64 * KIB));
    assert!(!mm.has_outdated());
    let mut out = vec![0; 10 * KIB as usize];
    mm.read(binding, &mut out).unwrap();
    assert_eq!(out, pattern(9, 10 * KIB as usize));
    assert_eq!(
        mm.get_storage(clone.binding()).unwrap(),
        mm.get_storage(binding).unwrap()
    );
    assert_eq!(mm.memory_usage().number_allocs, 2);
}

#[test]
fn a_dropped_plan_loses_nothing() {
    let (mut mm, old, _big_mm) = grown();
    let usage = mm.memory_usage();
    let view = mm.get_storage(old.binding()).unwrap();
    drop(mm.plan_relocation(TargetRoom::MayAllocate));
    mm.cleanup(false);
    assert_eq!(mm.memory_usage().number_allocs, usage.number_allocs);
    assert_eq!(mm.get_storage(old.binding()).unwrap(), view);
    assert!(mm.has_outdated());
}

#[test]
fn held_room_never_allocates_a_page_but_may_allocate_does() {
    let mut mm = manager(growable());
    let olds: Vec<_> = (0..6).map(|_| mm.reserve(10 * KIB).unwrap()).collect();
    let _big = mm.reserve(120 * KIB).unwrap(); // the 128 KiB page has 8 KiB left
    let allocs = mm.stats().storage_allocs;
    assert!(mm.plan_relocation(TargetRoom::Held).is_empty());
    assert_eq!(mm.stats().storage_allocs, allocs);
    let plan = mm.plan_relocation(TargetRoom::MayAllocate);
    assert_eq!(plan.moves(), 6);
    assert!(mm.stats().storage_allocs > allocs);
    drop(plan);
    drop(olds);
}

#[test]
fn a_page_with_a_raw_address_out_never_moves_until_released() {
    let (mut mm, old, _big_mm) = grown();
    let _ptr = mm.get_resource(old.binding(), None, None).unwrap();
    assert!(mm.plan_relocation(TargetRoom::MayAllocate).is_empty());
    assert_eq!(mm.relocation_state().shape.outdated_pinned, 1);
    // A raw address taken after planning keeps the page from moving at commit.
    mm.release_raw(old.binding()).unwrap();
    let plan = mm.plan_relocation(TargetRoom::MayAllocate);
    assert_eq!(plan.moves(), 1);
    let landed = mm.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    let _ptr = mm.get_resource(old.binding(), None, None).unwrap();
    assert_eq!(mm.commit_relocation(landed).unwrap().moved_slices, 0);
    assert!(mm.has_outdated());
}

#[test]
fn nothing_moves_during_a_capture() {
    let (mut mm, _old, _big_mm) = grown();
    let plan = mm.plan_relocation(TargetRoom::MayAllocate);
    let landed = mm.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    mm.capture_begin();
    assert!(mm.plan_relocation(TargetRoom::MayAllocate).is_empty());
    assert_eq!(mm.commit_relocation(landed).unwrap().moved_slices, 0);
    let _ = mm.capture_end();
    assert!(mm.has_outdated());
}

#[test]
fn an_allocation_freed_between_plan_and_commit_is_not_moved() {
    let (mut mm, old, _big_mm) = grown();
    let plan = mm.plan_relocation(TargetRoom::MayAllocate);
    drop(old);
    let landed = mm.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    let outcome = mm.commit_relocation(landed).unwrap();
    assert_eq!(outcome.moved_slices, 0);
    assert!(!mm.has_outdated());
    assert_eq!(mm.memory_usage().number_allocs, 1);
}

struct FailingQueue {
    fail_copy: bool,
}

impl CopyQueue<HostStorage> for FailingQueue {
    fn wait_device(&mut self, _: &mut HostStorage) -> Result<(), StorageError> {
        Ok(())
    }
    fn copy(
        &mut self,
        s: &mut HostStorage,
        src: &StorageHandle,
        dst: &StorageHandle,
    ) -> Result<(), StorageError> {
        if self.fail_copy {
            return Err(StorageError::Injected {
                call: 1,
                operation: "copy",
            });
        }
        s.copy(src, dst)
    }
    fn wait_copies(&mut self, _: &mut HostStorage) -> Result<(), StorageError> {
        if self.fail_copy {
            return Ok(());
        }
        Err(StorageError::Injected {
            call: 2,
            operation: "wait",
        })
    }
}

#[test]
fn a_failed_copy_frees_the_targets_and_moves_nothing() {
    let (mut mm, old, _big_mm) = grown();
    let usage = mm.memory_usage();
    let plan = mm.plan_relocation(TargetRoom::MayAllocate);
    let err = mm
        .copy_relocation(plan, &mut FailingQueue { fail_copy: true })
        .unwrap_err();
    assert!(matches!(
        err,
        RelocationCopyError::Copy {
            enqueued: 0,
            moves: 1,
            ..
        }
    ));
    mm.cleanup(false);
    assert_eq!(mm.memory_usage().number_allocs, usage.number_allocs);
    let mut out = vec![0; 10 * KIB as usize];
    mm.read(old.binding(), &mut out).unwrap();
    assert_eq!(out, pattern(9, 10 * KIB as usize));
}

#[test]
fn a_failed_wait_leaks_sources_and_targets_instead_of_freeing_them() {
    let (mut mm, old, _big_mm) = grown();
    let plan = mm.plan_relocation(TargetRoom::MayAllocate);
    let err = mm
        .copy_relocation(plan, &mut FailingQueue { fail_copy: false })
        .unwrap_err();
    assert!(
        matches!(err, RelocationCopyError::Wait { leaked_bytes, .. } if leaked_bytes == 20 * KIB)
    );
    assert_eq!(mm.stats().leaked_bytes, 20 * KIB);
    drop(old);
    mm.cleanup(true);
    assert!(
        mm.has_outdated(),
        "the outdated page holding a leaked source is never freed"
    );
    assert_eq!(mm.relocation_state().shape.outdated_pinned, 1);
}

#[test]
fn install_over_quarantined_memory_says_it_is_quarantined_and_the_old_layout_keeps_serving() {
    // A failed relocation wait quarantines the moved slices: nothing ever
    // gives that memory back, so install must not ask for a retry that
    // cannot help (it used to say PagesHeld: "synchronize and retry").
    let (mut mm, old, big) = grown();
    let plan = mm.plan_relocation(TargetRoom::MayAllocate);
    let err = mm
        .copy_relocation(plan, &mut FailingQueue { fail_copy: false })
        .unwrap_err();
    assert!(matches!(err, RelocationCopyError::Wait { .. }), "{err}");
    drop((old, big));
    let config = mm.configuration().clone();
    for _ in 0..2 {
        // Cleanups and a synchronized stream change nothing: still refused.
        mm.set_stream_progress(0, 0);
        let err = mm
            .install_pools(mem_pools::MemoryConfiguration::ExclusivePages, &props())
            .unwrap_err();
        let mem_pools::InstallMemoryPoolsError::PagesQuarantined {
            pages,
            reserved_bytes,
            leaked_bytes,
        } = err
        else {
            panic!("expected PagesQuarantined, got {err:?}");
        };
        // The outdated 64 KiB page (source) and the new page (target).
        assert_eq!((pages, leaked_bytes), (2, 20 * KIB));
        assert_eq!(reserved_bytes, 64 * KIB + 128 * KIB);
        assert!(err.to_string().contains("new manager"), "{err}");
        assert!(!err.is_out_of_memory());
        assert_eq!(mm.memory_usage().number_allocs, 0);
    }
    assert_eq!(mm.configuration(), &config, "the old layout is kept");
    let h = mm.reserve(10 * KIB).unwrap();
    mm.write(h.binding(), &pattern(3, 10 * KIB as usize))
        .unwrap();
    let mut out = vec![0; 10 * KIB as usize];
    mm.read(h.binding(), &mut out).unwrap();
    assert_eq!(out, pattern(3, 10 * KIB as usize));
}

#[test]
fn a_plan_from_another_manager_is_refused() {
    let (mut mm, _old, _big_mm) = grown();
    let (mut other, _o, _big_other) = grown();
    let plan = other.plan_relocation(TargetRoom::MayAllocate);
    assert!(matches!(
        mm.copy_relocation(plan, &mut StorageCopyQueue),
        Err(RelocationCopyError::Foreign { .. })
    ));
    let plan = other.plan_relocation(TargetRoom::MayAllocate);
    let landed = other.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    assert!(matches!(
        mm.commit_relocation(landed),
        Err(IoError::ForeignRelocation { .. })
    ));
}

#[test]
fn a_pool_runs_out_of_page_sizes_until_relocation_frees_the_outdated_ones() {
    let config = mem_pools::MemoryConfiguration::Custom {
        pool_options: vec![mem_pools::MemoryPoolOptions {
            pool_type: mem_pools::PoolType::SlicedPages {
                page_size: 4 * KIB,
                max_slice_size: MIB,
            },
            dealloc_period: None,
        }],
    };
    let mut mm = manager(config);
    // One live slice per page size: 4K, 8K, ..., 512K pages = 8 sizes alive.
    let keep: Vec<_> = [3, 5, 9, 17, 33, 65, 129, 257]
        .iter()
        .map(|k| mm.reserve(k * KIB).unwrap())
        .collect();
    let state = mm.relocation_state();
    assert!(state.out_of_page_sizes);
    assert_eq!(state.shape.outdated_pages, MAX_PAGE_SIZES - 1);
    let err = mm.reserve(513 * KIB).unwrap_err();
    assert!(
        matches!(err, IoError::PageSizesExhausted { wanted, generations: MAX_PAGE_SIZES, .. } if wanted == MIB),
        "{err}"
    );
    let plan = mm.plan_relocation(TargetRoom::MayAllocate);
    let landed = mm.copy_relocation(plan, &mut StorageCopyQueue).unwrap();
    let outcome = mm.commit_relocation(landed).unwrap();
    assert_eq!(outcome.pages_freed, MAX_PAGE_SIZES - 1);
    assert!(!mm.relocation_state().out_of_page_sizes);
    let grown = mm.reserve(513 * KIB);
    assert!(grown.is_ok());
    assert_eq!(mm.memory_usage().number_allocs, keep.len() as u64 + 1);
}
