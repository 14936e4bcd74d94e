//! Relocation and an open capture window: nothing reaches the capturing stream.

mod common;

use common::*;
use mem_pools::{CopyQueue, RelocationCopyError, TargetRoom};
use mem_storage::{ComputeStorage, HostStorage, StorageError, StorageHandle};

/// Counts every call the engine makes on the copy port.
#[derive(Default)]
struct Counting {
    calls: usize,
}

impl CopyQueue<HostStorage> for Counting {
    fn wait_device(&mut self, storage: &mut HostStorage) -> Result<(), StorageError> {
        self.calls += 1;
        storage.synchronize()
    }
    fn copy(
        &mut self,
        storage: &mut HostStorage,
        src: &StorageHandle,
        dst: &StorageHandle,
    ) -> Result<(), StorageError> {
        self.calls += 1;
        storage.copy(src, dst)
    }
    fn wait_copies(&mut self, storage: &mut HostStorage) -> Result<(), StorageError> {
        self.calls += 1;
        storage.synchronize()
    }
}

#[test]
fn copying_a_plan_inside_a_capture_window_is_refused_before_any_device_call_and_frees_its_targets()
{
    let mut mm = manager(growable());
    let old = mm.reserve(10 * KIB).unwrap();
    mm.write(old.binding(), &pattern(4, 10 * KIB as usize))
        .unwrap();
    let _big = mm.reserve(100 * KIB).unwrap();
    let plan = mm.plan_relocation(TargetRoom::MayAllocate);
    assert_eq!(plan.moves(), 1);
    let in_use = mm.memory_usage().bytes_in_use;
    mm.capture_begin();
    let mut queue = Counting::default();
    let copied = mm.copy_relocation(plan, &mut queue);
    assert_eq!(queue.calls, 0, "device calls inside the capture window");
    assert!(
        matches!(
            copied,
            Err(RelocationCopyError::Copy {
                enqueued: 0,
                moves: 1,
                ..
            })
        ),
        "{copied:?}"
    );
    assert!(mm.capture_end().is_empty());
    mm.drain_drops();
    assert_eq!(mm.memory_usage().bytes_in_use, in_use - 10 * KIB);
    let mut out = vec![0; 10 * KIB as usize];
    mm.read(old.binding(), &mut out).unwrap();
    assert_eq!(out, pattern(4, 10 * KIB as usize));
    assert!(mm.has_outdated(), "the outdated page did not move");
}
