//! A move never comes before the finish it needs, whatever the runtime's
//! other threads free between the steps' holds of a stream.
//!
//! A runtime like gpumem's `Device` folds queued drops into a stream's
//! memory each time a step takes the stream. A step that looked at the
//! memory in one hold ("not worth compacting, no finish needed") and
//! compacted in the next could move memory whose users' work was never
//! finished. This runtime frees slices at a chosen hold, every hold in
//! turn, and checks the order of finishes and copies.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use common::*;
use mem_pools::{CopyQueue, ManagedMemoryHandle, MemoryManagement};
use mem_relocate::{
    DeviceRelocation, RelocatingStreams, RelocationError, RelocationTrigger, StorageCopyQueue,
    StreamMemories, StreamParts,
};
use mem_storage::{HostStorage, StorageError, StorageHandle};

/// What happened, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Finish,
    Copy,
}

type Log = Rc<RefCell<Vec<Event>>>;

/// Host copies, each logged.
struct LoggedQueue(Log);

impl CopyQueue<HostStorage> for LoggedQueue {
    fn wait_device(&mut self, storage: &mut HostStorage) -> Result<(), StorageError> {
        StorageCopyQueue.wait_device(storage)
    }
    fn copy(
        &mut self,
        storage: &mut HostStorage,
        src: &StorageHandle,
        dst: &StorageHandle,
    ) -> Result<(), StorageError> {
        self.0.borrow_mut().push(Event::Copy);
        StorageCopyQueue.copy(storage, src, dst)
    }
    fn wait_copies(&mut self, storage: &mut HostStorage) -> Result<(), StorageError> {
        StorageCopyQueue.wait_copies(storage)
    }
}

/// One stream whose other threads drop `freed` just before hold `free_at`.
struct Racing {
    memory: MemoryManagement<HostStorage>,
    trigger: RelocationTrigger,
    queue: LoggedQueue,
    log: Log,
    holds: usize,
    free_at: usize,
    freed: Vec<ManagedMemoryHandle>,
}

impl StreamMemories for Racing {
    type Storage = HostStorage;
    type Error = RelocationError;

    fn stream_count(&self) -> usize {
        1
    }

    fn with_stream<R>(
        &mut self,
        _index: usize,
        f: impl FnOnce(StreamParts<'_, HostStorage>) -> R,
    ) -> R {
        if self.holds == self.free_at {
            self.freed.clear();
            self.memory.drain_drops();
        }
        self.holds += 1;
        f(StreamParts {
            memory: &mut self.memory,
            trigger: &mut self.trigger,
            queue: &mut self.queue,
        })
    }

    fn recording_streams(&mut self) -> usize {
        0
    }

    fn finish(&mut self) -> Result<(), RelocationError> {
        self.log.borrow_mut().push(Event::Finish);
        Ok(())
    }
}

/// Sixteen written 1 KiB slices filling four 4 KiB pages; the kept ones
/// (one per four) and the ones to free.
fn full_pages() -> (
    MemoryManagement<HostStorage>,
    Vec<(ManagedMemoryHandle, u64)>,
    Vec<ManagedMemoryHandle>,
) {
    let mut mm = manager();
    let all: Vec<_> = (0..16)
        .map(|seed| (written(&mut mm, KIB, seed), seed))
        .collect();
    let (kept, freed): (Vec<_>, Vec<_>) = all.into_iter().partition(|(_, seed)| seed % 4 == 0);
    let state = mm.compaction_state();
    assert_eq!(state.current_free_bytes, 0, "full pages: {state:?}");
    (mm, kept, freed.into_iter().map(|(h, _)| h).collect())
}

#[test]
fn a_reclaim_finishes_before_its_first_copy_whichever_hold_the_frees_land_in() {
    let mut compacted = 0;
    for free_at in 0..8 {
        let (memory, kept, freed) = full_pages();
        let log = Log::default();
        let racing = Racing {
            memory,
            trigger: RelocationTrigger::new(None),
            queue: LoggedQueue(log.clone()),
            log: log.clone(),
            holds: 0,
            free_at,
            freed,
        };
        let mut steps = DeviceRelocation::new(racing, 0).unwrap();
        steps.reclaim().unwrap();
        let events = log.borrow().clone();
        if let Some(first_copy) = events.iter().position(|e| *e == Event::Copy) {
            compacted += 1;
            assert!(
                events[..first_copy].contains(&Event::Finish),
                "frees at hold {free_at}: a copy came before any finish: {events:?}"
            );
        }
        let racing = steps.memories();
        for (handle, seed) in &kept {
            assert!(
                intact(&mut racing.memory, handle, *seed),
                "slice {seed} kept its bytes"
            );
        }
    }
    assert!(compacted > 0, "some hold's frees made the reclaim compact");
}
