//! Stream-ordered reclamation: an arena never unmaps a chunk while work
//! the stream submitted before the chunk's last slice was freed may still
//! run (`stream_order.rs`).
//!
//! The virtual memory is wrapped in a fault injector whose plan fails
//! nothing and watches every unmap: each span unmapped is checked against
//! the granules of every live slice and of every freed slice whose
//! stream work (the submit cursor at its free) is not yet complete.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use mem_pools::{
    ManagedMemoryHandle, MemoryConfiguration, MemoryManagement, MemoryManagementOptions,
    MemoryPoolOptions, PoolType, ServerLogger,
};
use mem_storage::{
    ComputeStorage, FaultInjection, FaultPlan, HostResource, HostVirtualMemory, Operation,
    ResourceStorage, VirtualMemory,
};
use proptest::prelude::*;

const G: u64 = 64 * KIB;

type Mm = MemoryManagement<ResourceStorage<HostResource>>;

/// A recorded use of granules `lo..hi` (addresses): live (`until` is
/// `u64::MAX`) or freed when the stream had submitted `until`.
#[derive(Debug, Clone, Copy)]
struct Use {
    lo: u64,
    hi: u64,
    until: u64,
}

/// What the unmap watcher sees: the uses, the stream's completed cursor,
/// and what it found.
#[derive(Debug, Default)]
struct Watch {
    uses: Vec<Use>,
    completed: u64,
    unmaps: u64,
    violations: Vec<String>,
}

fn watched(threshold: u64) -> (Arc<Mutex<Watch>>, Mm) {
    let vm = Arc::new(FaultInjection::new(
        HostVirtualMemory::with_granularity(64 * MIB, G).unwrap(),
    ));
    let watch = Arc::new(Mutex::new(Watch::default()));
    let seen = watch.clone();
    vm.set_plan(FaultPlan::Matching(Arc::new(move |call| {
        if call.operation == Operation::Unmap {
            let mut w = seen.lock().unwrap();
            w.unmaps += 1;
            let lo = call.ptr.map_or(0, |p| p.0);
            let hi = lo + call.bytes;
            let completed = w.completed;
            let bad: Vec<String> = w
                .uses
                .iter()
                .filter(|u| u.until > completed && u.lo < hi && lo < u.hi)
                .map(|u| format!("unmap {lo:#x}..{hi:#x} under {u:?}, completed {completed}"))
                .collect();
            w.violations.extend(bad);
        }
        false // watch only: fail nothing
    })));
    let storage = ResourceStorage::new(HostResource::new())
        .with_virtual_memory(vm.clone() as Arc<dyn VirtualMemory>);
    let mm = MemoryManagement::from_configuration(
        storage,
        &props(),
        MemoryConfiguration::Custom {
            pool_options: vec![MemoryPoolOptions {
                pool_type: PoolType::VirtualArena {
                    max_slice_size: 4 * MIB,
                    range_size: 16 * MIB,
                    release_threshold: threshold,
                },
                dealloc_period: None,
            }],
        },
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::default(),
    );
    (watch, mm)
}

/// The stream: its cursors, reported to the engine before every call.
struct Program {
    mm: Mm,
    watch: Arc<Mutex<Watch>>,
    submitted: u64,
    completed: u64,
    live: Vec<(ManagedMemoryHandle, usize)>,
}

impl Program {
    fn new(threshold: u64) -> Self {
        let (watch, mm) = watched(threshold);
        Self {
            mm,
            watch,
            submitted: 0,
            completed: 0,
            live: Vec::new(),
        }
    }

    fn report(&mut self) {
        self.watch.lock().unwrap().completed = self.completed;
        self.mm.set_stream_progress(self.submitted, self.completed);
    }

    fn reserve(&mut self, size: u64) {
        self.report();
        let Ok(handle) = self.mm.reserve(size) else {
            return;
        };
        let view = self.mm.get_storage(handle.binding()).unwrap();
        let ptr = self.mm.storage().get(&view).unwrap().ptr.0;
        let cap = size.max(1).next_multiple_of(256);
        let (lo, hi) = (ptr / G * G, (ptr + cap).next_multiple_of(G));
        let mut w = self.watch.lock().unwrap();
        w.uses.push(Use {
            lo,
            hi,
            until: u64::MAX,
        });
        self.live.push((handle, w.uses.len() - 1));
    }

    /// Drop a live handle: its use lasts through the work submitted so far.
    fn free(&mut self, which: usize) {
        if self.live.is_empty() {
            return;
        }
        let (handle, index) = self.live.swap_remove(which % self.live.len());
        self.watch.lock().unwrap().uses[index].until = self.submitted;
        drop(handle);
        self.report();
        self.mm.drain_drops();
    }

    fn violations(&self) -> Vec<String> {
        self.watch.lock().unwrap().violations.clone()
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_idle_chunk_waits_for_the_work_submitted_before_its_free() {
    // Threshold 0: every idle chunk the engine may give back goes at once.
    let mut p = Program::new(0);
    p.reserve(4 * G); // granules 0-3, one chunk
    p.reserve(256); // granule 4: the hole stays four granules
    p.submitted = 5; // work using them is queued
    p.free(0);
    assert_eq!(
        p.mm.stats().chunks.unmaps,
        0,
        "work through 5 may still read it"
    );
    assert!(p.mm.arena_chunks_waiting());
    p.report();
    p.mm.cleanup(true);
    assert_eq!(
        p.mm.stats().chunks.unmaps,
        0,
        "cleanup does not wait either"
    );
    // A reservation too big for the hole needs new memory: idle chunks
    // are past their share, but the one there is not ready, so it creates
    // instead of waiting.
    p.reserve(6 * G);
    assert_eq!(p.mm.stats().chunks.unmaps, 0);
    p.completed = 4;
    p.report();
    p.mm.cleanup(true);
    assert_eq!(
        p.mm.stats().chunks.unmaps,
        0,
        "operation 5 is still running"
    );
    p.completed = 5;
    p.report();
    p.mm.cleanup(true);
    assert_eq!(p.mm.stats().chunks.unmaps, 1, "complete: the chunk goes");
    assert!(!p.mm.arena_chunks_waiting());
    assert!(p.violations().is_empty(), "{:?}", p.violations());
    assert_eq!(p.watch.lock().unwrap().unmaps, 1);
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_handle_dropped_after_the_cursors_were_read_is_stamped_with_the_count_at_its_drop() {
    // The stream's live counter is shared with the engine: another thread
    // counts work on the slice and then drops its handle after this call
    // reported the cursors (5 submitted, all complete).
    let mut p = Program::new(0);
    let counter = Arc::new(std::sync::atomic::AtomicU64::new(0));
    p.mm.set_submit_cursor(counter.clone());
    p.reserve(4 * G);
    p.reserve(256);
    p.submitted = 5;
    p.completed = 5;
    counter.store(5, std::sync::atomic::Ordering::Release);
    p.report();
    // The other thread: its kernel on the slice is operation 6.
    counter.store(6, std::sync::atomic::Ordering::Release);
    let (handle, index) = p.live.swap_remove(0);
    p.watch.lock().unwrap().uses[index].until = 6;
    drop(handle);
    // This call takes the drop without reporting the cursors again.
    p.mm.drain_drops();
    assert!(
        p.mm.arena_chunks_waiting(),
        "the freed chunk waits for operation 6"
    );
    p.mm.cleanup(true);
    assert_eq!(p.mm.stats().chunks.unmaps, 0, "operation 6 may still run");
    assert!(p.violations().is_empty(), "{:?}", p.violations());
}

#[derive(Debug, Clone)]
enum Op {
    Reserve(u64),
    Free(usize),
    Submit,
    Complete(u64),
    Cleanup,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1..6 * G).prop_map(Op::Reserve),
        3 => any::<usize>().prop_map(Op::Free),
        2 => Just(Op::Submit),
        2 => (0u64..4).prop_map(Op::Complete),
        1 => Just(Op::Cleanup),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    #[cfg_attr(miri, ignore)]
    fn no_chunk_is_unmapped_while_work_that_may_touch_it_runs(
        threshold in prop_oneof![Just(0u64), Just(2 * G), Just(u64::MAX)],
        ops in prop::collection::vec(op(), 1..80),
    ) {
        let mut p = Program::new(threshold);
        for op in ops {
            match op {
                Op::Reserve(size) => p.reserve(size),
                Op::Free(i) => p.free(i),
                Op::Submit => p.submitted += 1,
                Op::Complete(k) => p.completed = (p.completed + k).min(p.submitted),
                Op::Cleanup => {
                    p.report();
                    p.mm.cleanup(true);
                }
            }
            prop_assert!(p.violations().is_empty(), "{:?}", p.violations());
        }
        // Everything completes: a cleanup gives every idle chunk back.
        while !p.live.is_empty() {
            p.free(0);
        }
        p.completed = p.submitted;
        p.report();
        p.mm.cleanup(true);
        prop_assert!(!p.mm.arena_chunks_waiting());
        prop_assert_eq!(p.mm.stats().chunks.cached_bytes, 0);
        prop_assert!(p.violations().is_empty(), "{:?}", p.violations());
    }
}
