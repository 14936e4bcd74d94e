//! Model-based property test: random programs of reserve / drop / write /
//! bind / mode / cleanup / install / capture / raw addresses / relocation,
//! on host storage with real bytes, checked against a simple model after
//! every step.
//!
//! Invariants checked after every step: every live allocation reads back
//! its own pattern; no two live allocations overlap; each lies inside its
//! page and is aligned; Σ live ≤ reserved; the engine's usage equals the
//! model's; memory with a raw address out or pinned by a graph never moves.
//!
//! The same programs run on arena pools (`PoolType::VirtualArena` alone,
//! arenas mixed with paged pools, `MemoryConfiguration::VirtualArenas`)
//! over a storage with virtual memory: `HostVirtualMemory` (real bytes) or
//! `SimulatedVirtualMemory` (counts only), 64 KiB chunks. Arena invariants:
//! the arenas' reserved bytes equal the bytes the VM maps, and no chunk
//! exists unmapped; every granule under a live slice is mapped (a probe in
//! every granule an allocation touches keeps its pattern; on the simulated
//! VM, a fill of the whole allocation is accepted); outside a capture each
//! arena pool caches at most its release threshold; peak physical memory
//! is at most the peak of granules live slices touch (the model's own
//! count); after everything is dropped and cleaned up the VM holds nothing.
//!
//! With lazy streams (the arena runs' `streams` switch) the stream's work
//! completes late: every write of an allocation and every relocation copy
//! is an operation at the next submit cursor, recorded as a use of the
//! allocation's addresses, and completes only at a `Complete` op (or when
//! a relocation's copy queue synchronizes the stream). The engine is told
//! both cursors before every call, and the virtual memory's watcher checks
//! the reclamation rule on every unmap: no address leaves its chunk while
//! a recorded use of it is incomplete. Where an idle chunk still waits
//! for its work the threshold and cleanup bounds above give way (it stays
//! mapped), and the threshold bound again only after an explicit cleanup
//! (a chunk that became ready stays until a free or cleanup trims it);
//! the teardown completes everything first.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use common::*;
use mem_pools::{
    InstallMemoryPoolsError, IoError, ManagedMemoryBinding, ManagedMemoryHandle,
    MemoryAllocationMode, MemoryConfiguration, MemoryManagement, MemoryManagementOptions,
    MemoryPoolOptions, PoolReportKind, PoolType, RawPin, RelocationCopyError, ServerLogger,
    StorageCopyQueue, TargetRoom,
};
use mem_storage::{
    ComputeStorage, FaultInjection, FaultPlan, HostStorage, HostVirtualMemory, Operation, RangeId,
    SimulatedVirtualMemory, StorageError, StorageHandle, VirtualMemory,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Reserve(u64),
    Drop(usize),
    Rewrite(usize),
    Bind(usize, usize, u64),
    Mode(bool),
    Cleanup(bool),
    Install(u8),
    CaptureBegin,
    PrimingEnd,
    CaptureEnd,
    DropGraph(usize),
    Clone(usize),
    DropClone(usize),
    Raw(usize),
    ReleaseRaw(usize),
    RawPin(usize),
    DropRawPin(usize),
    Relocate(bool),
    Compact,
    /// The device completes this many more of the stream's operations
    /// (lazy streams only).
    Complete(u8),
}

fn size() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0..2048u64,
        4 => 2048..64 * KIB,
        2 => 64 * KIB..600 * KIB,
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => size().prop_map(Op::Reserve),
        6 => any::<usize>().prop_map(Op::Drop),
        2 => any::<usize>().prop_map(Op::Rewrite),
        2 => (any::<usize>(), any::<usize>(), any::<u64>()).prop_map(|(a, b, c)| Op::Bind(a, b, c)),
        2 => any::<bool>().prop_map(Op::Mode),
        1 => any::<bool>().prop_map(Op::Cleanup),
        1 => (0..CONFIGS).prop_map(Op::Install),
        1 => Just(Op::CaptureBegin),
        1 => Just(Op::PrimingEnd),
        1 => Just(Op::CaptureEnd),
        1 => any::<usize>().prop_map(Op::DropGraph),
        1 => any::<usize>().prop_map(Op::Clone),
        1 => any::<usize>().prop_map(Op::DropClone),
        1 => any::<usize>().prop_map(Op::Raw),
        1 => any::<usize>().prop_map(Op::ReleaseRaw),
        1 => any::<usize>().prop_map(Op::RawPin),
        1 => any::<usize>().prop_map(Op::DropRawPin),
        4 => any::<bool>().prop_map(Op::Relocate),
        2 => Just(Op::Compact),
        4 => (1u8..8).prop_map(Op::Complete),
    ]
}

/// Chunk granularity of the arena runs' virtual memory.
const G: u64 = 64 * KIB;

/// Layouts [`config`] knows: 0..3 paged, 3.. arenas.
const CONFIGS: u8 = 6;

/// What the manager's storage is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    /// Host pages only (no virtual memory: paged layouts only).
    Plain,
    /// Host pages and `HostVirtualMemory` (real bytes under arenas).
    HostVm,
    /// Host pages and `SimulatedVirtualMemory` (arena slices hold no bytes).
    SimVm,
}

impl Backend {
    /// Layouts this storage can serve: arenas need virtual memory.
    fn configs(self) -> u8 {
        match self {
            Backend::Plain => 3,
            _ => CONFIGS,
        }
    }
}

fn config(which: u8) -> MemoryConfiguration {
    let arena = |max_slice_size, range_size, release_threshold| MemoryPoolOptions {
        pool_type: PoolType::VirtualArena {
            max_slice_size,
            range_size,
            release_threshold,
        },
        dealloc_period: None,
    };
    match which {
        0 => MemoryConfiguration::SubSlices,
        1 => MemoryConfiguration::ExclusivePages,
        2 => MemoryConfiguration::Custom {
            pool_options: vec![
                MemoryPoolOptions {
                    pool_type: PoolType::SlicedPages {
                        page_size: 16 * KIB,
                        max_slice_size: 512 * KIB,
                    },
                    dealloc_period: None,
                },
                MemoryPoolOptions {
                    pool_type: PoolType::ExclusivePages {
                        max_alloc_size: 4 * MIB,
                    },
                    dealloc_period: Some(20),
                },
            ],
        },
        // One arena alone; 1 MiB ranges, so a second range is reserved when
        // the first is too fragmented for a slice.
        3 => MemoryConfiguration::Custom {
            pool_options: vec![arena(MIB, MIB, 3 * G)],
        },
        // Arenas mixed with a growable sliced pool: small slices in an
        // arena that caches, mid sizes paged, large ones in an arena that
        // caches nothing.
        4 => MemoryConfiguration::Custom {
            pool_options: vec![
                arena(16 * KIB, 512 * KIB, 2 * G),
                MemoryPoolOptions {
                    pool_type: PoolType::SlicedPages {
                        page_size: 64 * KIB,
                        max_slice_size: 256 * KIB,
                    },
                    dealloc_period: None,
                },
                arena(4 * MIB, 4 * MIB, 0),
            ],
        },
        _ => MemoryConfiguration::VirtualArenas,
    }
}

/// Non-overlapping (offset, length) probes of an allocation of `size`
/// bytes: its head, 16 bytes at every multiple of the granularity and its
/// tail, so every granule a slice touches holds at least one probe.
fn probes(size: u64) -> Vec<(u64, u64)> {
    let head = size.min(CHECKED as u64);
    let mut out = vec![(0, head)];
    let mut end = head;
    let mut at = G;
    while at < size {
        if at >= end {
            let len = 16.min(size - at);
            out.push((at, len));
            end = at + len;
        }
        at += G;
    }
    let tail = size.saturating_sub(16).max(end);
    if tail < size {
        out.push((tail, size - tail));
    }
    out
}

fn probe_pattern(seed: u64, at: u64, len: u64) -> Vec<u8> {
    pattern(seed.wrapping_add(at.wrapping_mul(0x9e37)), len as usize)
}

/// The lazy stream's cursors and the uses of memory its operations make,
/// shared with the virtual memory's unmap watcher.
#[derive(Debug, Default)]
struct Streams {
    submitted: u64,
    completed: u64,
    /// Uses not yet complete: (cursor, first address, end address).
    open: Vec<(u64, u64, u64)>,
    /// Unmaps watched, those made while some use was incomplete, and the
    /// ones that hit an incomplete use.
    unmaps: u64,
    open_at_unmap: u64,
    broken: Vec<String>,
}

impl Streams {
    fn complete(&mut self, ops: u64) {
        self.completed = self.completed.saturating_add(ops).min(self.submitted);
        let done = self.completed;
        self.open.retain(|&(cursor, _, _)| cursor > done);
    }

    /// The reclamation rule, at an unmap of `lo..hi`.
    fn unmapped(&mut self, lo: u64, hi: u64) {
        self.unmaps += 1;
        self.open_at_unmap += u64::from(!self.open.is_empty());
        for &(cursor, a, b) in &self.open {
            if a < hi && lo < b {
                self.broken.push(format!(
                    "{lo:#x}..{hi:#x} unmapped under running work: operation {cursor} on {a:#x}..{b:#x}, completed {}",
                    self.completed
                ));
            }
        }
    }
}

type Shared = Arc<std::sync::Mutex<Streams>>;

/// `vm` behind a fault injector that fails nothing and hands every unmap
/// to `streams`' rule.
fn watched<V: VirtualMemory + 'static>(vm: V, streams: &Shared) -> Arc<dyn VirtualMemory> {
    let vm = FaultInjection::new(vm);
    let seen = streams.clone();
    vm.set_plan(FaultPlan::Matching(Arc::new(move |call| {
        if call.operation == Operation::Unmap {
            let lo = call.ptr.map_or(0, |p| p.0);
            seen.lock().unwrap().unmapped(lo, lo + call.bytes);
        }
        false
    })));
    Arc::new(vm)
}

/// A manager over `backend` with layout `which`, and its virtual memory
/// (every unmap watched by `streams`).
fn build(
    backend: Backend,
    which: u8,
    lazy: bool,
    streams: &Shared,
) -> (
    MemoryManagement<HostStorage>,
    Option<Arc<dyn VirtualMemory>>,
) {
    let vm: Option<Arc<dyn VirtualMemory>> = match backend {
        Backend::Plain => None,
        Backend::HostVm => Some(watched(
            HostVirtualMemory::with_granularity(512 * MIB, G).expect("64 KiB host chunks"),
            streams,
        )),
        Backend::SimVm => Some(watched(
            SimulatedVirtualMemory::with_granularity(512 * MIB, G).expect("64 KiB chunks"),
            streams,
        )),
    };
    let storage = match &vm {
        Some(vm) => HostStorage::host().with_virtual_memory(vm.clone()),
        None => HostStorage::host(),
    };
    let mm = MemoryManagement::from_configuration(
        storage,
        &props(),
        config(which % backend.configs()),
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions {
            lazy_pages: lazy,
            ..Default::default()
        },
    );
    (mm, vm)
}

struct Live {
    handle: ManagedMemoryHandle,
    seed: u64,
    /// Its probes hold `seed`'s patterns (false: an arena slice on the
    /// simulated VM, which has no bytes).
    bytes: bool,
    persistent: bool,
    raw: bool,
}

struct Model {
    mm: MemoryManagement<HostStorage>,
    backend: Backend,
    vm: Option<Arc<dyn VirtualMemory>>,
    /// Most granules live arena slices touched at once (model's count).
    peak_touched: u64,
    /// A capture window ran since the arenas were last trimmed to zero:
    /// frees inside it cache chunks beyond the threshold.
    untrimmed: bool,
    /// An explicit cleanup (or an install) ran outside a capture since the
    /// last check: no chunk is idle, physical memory is exactly the
    /// granules live slices touch.
    cleaned: bool,
    live: Vec<Live>,
    /// Allocations the engine retains while priming (binding, persistent).
    primed: Vec<(ManagedMemoryBinding, bool)>,
    graphs: Vec<Vec<ManagedMemoryHandle>>,
    /// Extra holders (clones) of allocations.
    clones: Vec<ManagedMemoryHandle>,
    /// Second parties' raw pins (they may outlive their memory).
    guards: Vec<RawPin>,
    depth: u64,
    capture: Option<bool>, // Some(priming)
    next_seed: u64,
    /// The stream completes its work lazily (else the engine is never told
    /// progress and every idle chunk is ready).
    lazy_streams: bool,
    /// Tell the engine all work is complete while it runs (the runtime bug
    /// the unmap watcher must catch).
    misreport: bool,
    streams: Shared,
    /// An idle chunk waited for its work since the last explicit cleanup:
    /// once ready it stays until the next free or cleanup trims it, so the
    /// threshold bound waits for that cleanup.
    backlog: bool,
}

const CHECKED: usize = 4096;
static MOVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Pages given back by commits of compaction plans.
static COMPACTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static PINNED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static WOULD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Arena runs: chunks created, chunk maps, runs that reserved a second
/// range, steps that saw arena slices live.
static CREATES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static MAPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static MULTI_RANGE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static ARENA_STEPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Threshold checks that found an arena caching chunks.
static CACHING: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Operations the unmap watcher caught under running work, over every run.
static CAUGHT_UNMAPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Unmaps the watcher checked on lazy streams before a teardown, and
/// those made while some use was incomplete.
static WATCHED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static WATCHED_OPEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Steps that ended with an idle chunk waiting for its work.
static WAITING: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Model {
    /// Tell the engine the stream's cursors (lazy streams only).
    fn report(&mut self) {
        if !self.lazy_streams {
            return;
        }
        let s = self.streams.lock().unwrap();
        let completed = if self.misreport {
            s.submitted
        } else {
            s.completed
        };
        let submitted = s.submitted;
        drop(s);
        self.mm.set_stream_progress(submitted, completed);
    }

    /// One operation using the memory of `bindings` (lazy streams only).
    fn submit(&mut self, bindings: &[ManagedMemoryBinding]) {
        if !self.lazy_streams {
            return;
        }
        let mut spans = Vec::new();
        for &b in bindings {
            let view = self.view(b);
            let ptr = self.mm.storage().get(&view).unwrap().ptr.0;
            spans.push((ptr, ptr + b.size().max(1)));
        }
        let mut s = self.streams.lock().unwrap();
        s.submitted += 1;
        let cursor = s.submitted;
        s.open
            .extend(spans.into_iter().map(|(lo, hi)| (cursor, lo, hi)));
    }

    /// An idle chunk waits for the stream's work (lazy streams only).
    fn waiting(&self) -> bool {
        self.lazy_streams && self.mm.arena_chunks_waiting()
    }

    fn persistent_now(&self) -> bool {
        self.depth > 0 || self.capture.is_some()
    }

    fn write(&mut self, i: usize) {
        self.next_seed += 1;
        let seed = self.next_seed;
        let b = self.live[i].handle.binding();
        self.live[i].seed = seed;
        self.submit(&[b]);
        let view = self.view(b);
        let mut result = Ok(());
        for (at, len) in probes(b.size()) {
            let probe = view.narrow(Some(at), Some(at + len)).unwrap();
            result = self
                .mm
                .storage()
                .write(&probe, &probe_pattern(seed, at, len));
            if result.is_err() {
                break;
            }
        }
        self.live[i].bytes = match result {
            Ok(()) => true,
            // An arena slice on the simulated VM: no bytes, but a fill of
            // the whole slice proves every granule under it is mapped.
            Err(StorageError::Unsupported { .. }) if self.backend == Backend::SimVm => {
                self.mm.storage().fill(&view, 0).unwrap();
                false
            }
            Err(e) => panic!("writing allocation {i}: {e}"),
        };
    }

    fn pick(&self, i: usize) -> Option<usize> {
        (!self.live.is_empty()).then(|| i % self.live.len())
    }

    fn view(&mut self, b: ManagedMemoryBinding) -> StorageHandle {
        self.mm.get_storage(b).unwrap()
    }

    /// Views that must not move: raw-out entries and graph-pinned memory.
    fn fixed_views(&mut self) -> Vec<(ManagedMemoryBinding, StorageHandle)> {
        let mut bs: Vec<_> = self
            .live
            .iter()
            .filter(|l| l.raw)
            .map(|l| l.handle.binding())
            .collect();
        bs.extend(self.graphs.iter().flatten().map(|h| h.binding()));
        let mut fixed: Vec<_> = bs.into_iter().map(|b| (b, self.view(b))).collect();
        let guarded: Vec<_> = self.guards.iter().map(RawPin::binding).collect();
        for b in guarded {
            if let Ok(view) = self.mm.get_storage(b) {
                fixed.push((b, view));
            }
        }
        fixed
    }

    fn apply(&mut self, op: Op) {
        self.report();
        match op {
            Op::Complete(n) => {
                if self.lazy_streams {
                    self.streams.lock().unwrap().complete(u64::from(n));
                }
            }
            Op::Reserve(size) => match self.mm.reserve(size) {
                Ok(handle) => {
                    let persistent = self.persistent_now();
                    if self.capture == Some(true) {
                        self.primed.push((handle.binding(), persistent));
                    }
                    self.live.push(Live {
                        handle,
                        seed: 0,
                        bytes: false,
                        persistent,
                        raw: false,
                    });
                    self.write(self.live.len() - 1);
                }
                Err(IoError::CaptureWouldAllocate { size: s, .. }) => {
                    assert_eq!(self.capture, Some(false), "only inside the window");
                    assert_eq!(s, size);
                    WOULD.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Err(IoError::PageSizesExhausted { .. }) => {}
                Err(e) => panic!("reserve({size}) failed: {e}"),
            },
            Op::Drop(i) => {
                if let Some(i) = self.pick(i) {
                    self.live.swap_remove(i);
                }
            }
            Op::Rewrite(i) => {
                if let Some(i) = self.pick(i) {
                    self.write(i);
                }
            }
            Op::Bind(r, a, cursor) => {
                let (Some(r), Some(a)) = (self.pick(r), self.pick(a)) else {
                    return;
                };
                let assigned = self.live[a].handle.clone();
                if r == a {
                    self.mm
                        .bind(assigned.clone(), assigned.clone(), cursor)
                        .unwrap();
                    assert_eq!(self.mm.get_cursor(assigned.binding()).unwrap(), cursor);
                    return;
                }
                let rb = self.live[r].handle.binding();
                let shared = self
                    .graphs
                    .iter()
                    .flatten()
                    .chain(&self.clones)
                    .any(|h| h.binding() == rb)
                    || self.guards.iter().any(|g| g.binding() == rb);
                // A pin lasts while its graph holds the pin handle.
                let ab = self.live[a].handle.binding();
                let assigned_pinned = self.graphs.iter().flatten().any(|h| h.binding() == ab)
                    || self.guards.iter().any(|g| g.binding() == ab);
                let entry = self.live.swap_remove(r);
                let a = self
                    .live
                    .iter()
                    .position(|l| l.handle.binding() == assigned.binding())
                    .unwrap();
                let old_cursor = self.mm.get_cursor(rb).unwrap();
                match self.mm.try_bind(entry.handle, assigned.clone(), cursor) {
                    Ok(()) => {
                        assert!(!shared, "bind accepted a reserved handle a graph holds");
                        assert!(!assigned_pinned, "bind freed graph-pinned memory");
                        assert_eq!(self.mm.get_cursor(assigned.binding()).unwrap(), cursor);
                        assert!(
                            self.mm.get_storage(rb).is_err(),
                            "the reserved name must go stale"
                        );
                        let target = &mut self.live[a];
                        target.seed = entry.seed;
                        target.bytes = entry.bytes;
                        target.persistent = entry.persistent;
                        target.raw = entry.raw;
                        if self.capture == Some(true) {
                            self.primed.push((assigned.binding(), entry.persistent));
                        }
                    }
                    Err(refused) => {
                        match refused.error {
                            IoError::SharedReserved { holders } => assert!(shared && holders > 1),
                            IoError::AssignedPinned { .. } => assert!(!shared && assigned_pinned),
                            ref e => panic!("bind failed: {e}"),
                        }
                        let (reserved, _) = refused.into_handles();
                        self.live.push(Live {
                            handle: reserved,
                            seed: entry.seed,
                            bytes: entry.bytes,
                            persistent: entry.persistent,
                            raw: entry.raw,
                        });
                    }
                }
                if self.mm.get_storage(rb).is_ok() {
                    // Refused: nothing changed, the reserved entry is still ours.
                    assert_eq!(self.mm.get_cursor(rb).unwrap(), old_cursor);
                }
            }
            Op::Mode(persistent) => {
                if persistent {
                    self.depth += 1;
                    self.mm.mode(MemoryAllocationMode::Persistent);
                } else {
                    self.depth = self.depth.saturating_sub(1);
                    self.mm.mode(MemoryAllocationMode::Auto);
                }
            }
            Op::Cleanup(explicit) => {
                self.mm.cleanup(explicit);
                if explicit && self.capture.is_none() {
                    self.untrimmed = false;
                    self.cleaned = true;
                }
            }
            Op::Install(which) => {
                let waiting = self.waiting();
                let dynamic =
                    self.live.iter().any(|l| !l.persistent) || self.primed.iter().any(|(_, p)| !p);
                let which = which % self.backend.configs();
                match self.mm.install_pools(config(which), &props()) {
                    Ok(()) => {
                        assert!(
                            self.capture.is_none() && !dynamic,
                            "installed over live dynamic memory"
                        );
                        self.untrimmed = false;
                        self.cleaned = true;
                    }
                    Err(InstallMemoryPoolsError::CaptureActive) => assert!(self.capture.is_some()),
                    Err(InstallMemoryPoolsError::PagesHeld { pages, .. }) => {
                        // An idle chunk whose work runs keeps its range.
                        assert!(waiting && pages > 0, "pages held with nothing waiting");
                    }
                    Err(InstallMemoryPoolsError::PoolsInUse { live_slices, .. }) => {
                        assert!(live_slices > 0, "refused as in use with nothing live");
                        // Graph handles and clones may hold dynamic memory the live list dropped.
                        let unknown =
                            self.graphs.iter().flatten().count() > 0 || !self.clones.is_empty();
                        assert!(
                            dynamic || unknown || waiting,
                            "refused with nothing dynamic live"
                        );
                    }
                    Err(other) => panic!("install refused for a reason the model lacks: {other}"),
                }
            }
            Op::CaptureBegin => {
                self.mm.capture_begin();
                self.untrimmed = true;
                if self.capture.is_none() {
                    self.capture = Some(true);
                }
            }
            Op::PrimingEnd => {
                self.mm.capture_priming_end();
                if self.capture.is_some() {
                    self.capture = Some(false);
                    self.primed.clear();
                }
            }
            Op::CaptureEnd => {
                let graph = self.mm.capture_end();
                PINNED.fetch_add(graph.len() as u64, std::sync::atomic::Ordering::Relaxed);
                if self.capture.take().is_none() {
                    assert!(graph.is_empty());
                }
                self.primed.clear();
                assert!(graph.iter().all(|h| h.is_pin()));
                self.graphs.push(graph);
            }
            Op::DropGraph(i) => {
                if !self.graphs.is_empty() {
                    let i = i % self.graphs.len();
                    self.graphs.swap_remove(i);
                }
            }
            Op::Clone(i) => {
                if let Some(i) = self.pick(i) {
                    let h = self.live[i].handle.clone();
                    assert!(!h.can_mut());
                    self.clones.push(h);
                }
            }
            Op::DropClone(i) => {
                if !self.clones.is_empty() {
                    let i = i % self.clones.len();
                    self.clones.swap_remove(i);
                }
            }
            Op::Raw(i) => {
                if let Some(i) = self.pick(i) {
                    self.mm
                        .get_resource(self.live[i].handle.binding(), None, None)
                        .unwrap();
                    self.live[i].raw = true;
                }
            }
            Op::ReleaseRaw(i) => {
                if let Some(i) = self.pick(i) {
                    self.mm.release_raw(self.live[i].handle.binding()).unwrap();
                    self.live[i].raw = false;
                }
            }
            Op::RawPin(i) => {
                if let Some(i) = self.pick(i) {
                    let pin = self.mm.raw_pin(self.live[i].handle.binding()).unwrap();
                    self.guards.push(pin);
                }
            }
            Op::DropRawPin(i) => {
                if !self.guards.is_empty() {
                    let i = i % self.guards.len();
                    self.guards.swap_remove(i);
                }
            }
            Op::Relocate(_) | Op::Compact => {
                // The copies are one operation using every live allocation
                // (any may be a source); told before the commit frees them.
                let live: Vec<_> = self.live.iter().map(|l| l.handle.binding()).collect();
                self.submit(&live);
                self.report();
                let fixed = self.fixed_views();
                let reserved = self.mm.memory_usage().bytes_reserved;
                let plan = match op {
                    Op::Relocate(true) => self.mm.plan_relocation(TargetRoom::MayAllocate),
                    Op::Relocate(false) => self.mm.plan_relocation(TargetRoom::Held),
                    _ => {
                        let plan = self.mm.plan_compaction();
                        let planned = self.mm.memory_usage().bytes_reserved;
                        assert_eq!(planned, reserved, "a compaction plan allocated");
                        plan
                    }
                };
                if self.capture.is_some() {
                    assert!(plan.is_empty());
                    let refused = self.mm.copy_relocation(plan, &mut StorageCopyQueue);
                    assert!(
                        matches!(refused, Err(RelocationCopyError::Copy { enqueued: 0, .. })),
                        "a copy inside a capture window: {refused:?}"
                    );
                    return;
                }
                let landed = self
                    .mm
                    .copy_relocation(plan, &mut StorageCopyQueue)
                    .unwrap();
                let outcome = self.mm.commit_relocation(landed).unwrap();
                if outcome.moved_slices > 0 && self.lazy_streams {
                    // The copy queue synchronized the stream around its copies.
                    self.streams.lock().unwrap().complete(u64::MAX);
                }
                if matches!(op, Op::Compact) {
                    COMPACTED.fetch_add(
                        outcome.pages_freed as u64,
                        std::sync::atomic::Ordering::Relaxed,
                    );
                }
                MOVED.fetch_add(
                    outcome.moved_slices as u64,
                    std::sync::atomic::Ordering::Relaxed,
                );
                for (b, view) in fixed {
                    assert_eq!(self.view(b), view, "pinned or raw-out memory moved");
                }
            }
        }
    }

    fn check(&mut self) {
        self.report();
        self.mm.drain_drops();
        let broken = std::mem::take(&mut self.streams.lock().unwrap().broken);
        CAUGHT_UNMAPS.fetch_add(broken.len() as u64, std::sync::atomic::Ordering::Relaxed);
        assert!(broken.is_empty(), "{}", broken.join("\n"));
        if self.waiting() {
            WAITING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.backlog = true;
        } else if self.cleaned {
            self.backlog = false;
        }
        // Every live allocation reads back its patterns (every granule it
        // touches is mapped, on arenas).
        for i in 0..self.live.len() {
            let (b, seed) = (self.live[i].handle.binding(), self.live[i].seed);
            let view = self.view(b);
            if !self.live[i].bytes {
                self.mm.storage().fill(&view, 0).unwrap();
                continue;
            }
            for (at, len) in probes(b.size()) {
                let probe = view.narrow(Some(at), Some(at + len)).unwrap();
                let mut out = vec![0; len as usize];
                self.mm.storage().read(&probe, &mut out).unwrap();
                assert_eq!(
                    out,
                    probe_pattern(seed, at, len),
                    "allocation {i} lost its bytes at {at}"
                );
            }
        }
        // Distinct allocations held anywhere (model, priming clones, graphs).
        let holders: Vec<ManagedMemoryHandle> =
            self.live.iter().map(|l| l.handle.clone()).collect();
        let mut names: Vec<ManagedMemoryBinding> = holders.iter().map(|h| h.binding()).collect();
        names.extend(self.primed.iter().map(|(b, _)| *b));
        names.extend(self.graphs.iter().flatten().map(|h| h.binding()));
        names.extend(self.clones.iter().map(|h| h.binding()));
        let mut seen = HashSet::new();
        let mut ranges: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
        let (mut count, mut bytes) = (0u64, 0u64);
        // The VM's live ranges: an allocation inside one is an arena slice.
        let vm_ranges: Vec<(u64, u64)> = self.vm.as_ref().map_or(Vec::new(), |vm| {
            (1..=vm.vm_stats().ranges_reserved)
                .filter_map(|id| vm.range_info(RangeId(id)).ok())
                .map(|r| (r.base.0, r.base.0 + r.len))
                .collect()
        });
        let mut touched = HashSet::new();
        for b in names {
            let Ok(view) = self.mm.get_storage(b) else {
                continue; // a primed allocation that was freed or bound away
            };
            if !seen.insert((b.manager_id(), view.id, view.offset())) {
                continue;
            }
            let ptr = self.mm.storage().get(&view).unwrap().ptr.0;
            if vm_ranges.iter().any(|&(lo, hi)| lo <= ptr && ptr < hi) {
                let cap = view.size().max(1).next_multiple_of(256);
                let (first, last) = (view.offset() / G, (view.offset() + cap - 1) / G);
                touched.extend((first..=last).map(|g| (view.id, g)));
            }
            count += 1;
            bytes += view.size();
            assert_eq!(view.offset() % 256, 0, "misaligned");
            assert!(self.mm.storage().get(&view).is_ok(), "outside its page");
            ranges
                .entry(view.id.0)
                .or_default()
                .push((view.offset(), view.offset() + view.size()));
        }
        for list in ranges.values_mut() {
            list.sort();
            for w in list.windows(2) {
                assert!(w[0].1 <= w[1].0 || w[0].0 == w[0].1, "overlap {w:?}");
            }
        }
        let usage = self.mm.memory_usage();
        assert_eq!(
            usage.number_allocs, count,
            "live count differs from the model"
        );
        assert_eq!(
            usage.bytes_in_use, bytes,
            "live bytes differ from the model"
        );
        assert!(usage.bytes_in_use + usage.bytes_padding <= usage.bytes_reserved);
        assert_eq!(
            usage.pages_with_live_data,
            ranges.len() as u64,
            "pages holding live data differ from the model"
        );
        assert!(usage.pages_with_live_data <= usage.pages);
        assert!(self.mm.storage().bytes_allocated() <= usage.bytes_reserved);
        self.peak_touched = self.peak_touched.max(touched.len() as u64);
        if !touched.is_empty() {
            ARENA_STEPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        if let Some(vm) = self.vm.clone() {
            self.check_arenas(vm.as_ref(), touched.len() as u64);
        }
        self.cleaned = false;
    }

    /// `touched`: granules under live arena slices, by the model's count.
    fn check_arenas(&mut self, vm: &dyn VirtualMemory, touched: u64) {
        let vs = vm.vm_stats();
        let stats = self.mm.stats();
        let report = self.mm.memory_report();
        let (mut arenas, mut paged, mut cached) = (0, 0, 0);
        for pool in &report.pools {
            match pool.kind {
                PoolReportKind::Arena {
                    release_threshold,
                    cached_bytes,
                    ..
                } => {
                    arenas += pool.bytes_reserved;
                    cached += cached_bytes;
                    if self.capture.is_none() && !self.untrimmed {
                        if cached_bytes > 0 {
                            CACHING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                        // A chunk goes only whole: idle granules of a
                        // chunk that still holds a live one stay mapped
                        // over the threshold until it empties, so the
                        // threshold is exact once nothing is live.
                        assert!(
                            cached_bytes <= release_threshold || touched > 0 || self.backlog,
                            "an arena caches {cached_bytes} bytes, above its threshold {release_threshold}"
                        );
                    }
                }
                _ => paged += pool.bytes_reserved,
            }
        }
        assert_eq!(
            arenas, vs.mapped_bytes,
            "arena reserved bytes = VM mapped bytes"
        );
        assert_eq!(
            stats.reserved_bytes.current,
            vs.mapped_bytes + paged,
            "reserved bytes = VM mapped + pages"
        );
        assert_eq!(
            vs.physical_bytes, vs.mapped_bytes,
            "a chunk exists unmapped"
        );
        assert_eq!(stats.chunks.cached_bytes, cached);
        assert_eq!(
            vs.mapped_bytes,
            touched * G + cached,
            "mapped = granules under live slices ({touched}) + idle chunks"
        );
        if self.cleaned && !self.waiting() {
            // A chunk goes only whole: idle granules stay mapped after a
            // cleanup only in chunks that still hold a live granule, so
            // every mapping left covers one (and no two share a granule).
            assert!(
                vs.live_mappings() <= touched,
                "an explicit cleanup leaves a chunk with no live granule ({} mappings, {touched} live granules)",
                vs.live_mappings()
            );
            assert!(cached == 0 || touched > 0, "cleanup left idle chunks");
        }
        assert_eq!(
            stats.chunks.virtual_bytes, vs.virtual_bytes,
            "arena ranges = VM ranges"
        );
        // A chunk covers the run of empty slots it was created for and is
        // unmapped only whole, so a chunk still partly live keeps its idle
        // slots mapped: the old bound (peak physical within
        // IDLE_SHARE/(IDLE_SHARE-1) of the granules touched) no longer
        // holds by construction. What holds: idle chunks are shed before a
        // create once they reach 1/IDLE_SHARE of the mapped slots, so with
        // no chunk partly live, mapped stays within that bound plus the
        // run being created; docs/pools.md gives the measured peaks.
    }
}

fn run(backend: Backend, which: u8, lazy: bool, ops: Vec<Op>) {
    let _ = run_on_streams(backend, which, lazy, false, false, ops);
}

/// `run`, the stream's work completing lazily with `lazy_streams`, and the
/// engine told it is all complete with `misreport`. Returns the unmaps
/// made before the teardown.
fn run_on_streams(
    backend: Backend,
    which: u8,
    lazy: bool,
    lazy_streams: bool,
    misreport: bool,
    ops: Vec<Op>,
) -> u64 {
    let streams = Shared::default();
    let (mm, vm) = build(backend, which, lazy, &streams);
    let mut model = Model {
        mm,
        backend,
        vm,
        peak_touched: 0,
        untrimmed: false,
        cleaned: false,
        live: Vec::new(),
        primed: Vec::new(),
        graphs: Vec::new(),
        clones: Vec::new(),
        guards: Vec::new(),
        depth: 0,
        capture: None,
        next_seed: 0,
        lazy_streams,
        misreport,
        streams,
        backlog: false,
    };
    for op in ops {
        model.apply(op);
        model.check();
    }
    let (unmaps, open_at_unmap) = {
        let s = model.streams.lock().unwrap();
        (s.unmaps, s.open_at_unmap)
    };
    if lazy_streams {
        WATCHED.fetch_add(unmaps, std::sync::atomic::Ordering::Relaxed);
        WATCHED_OPEN.fetch_add(open_at_unmap, std::sync::atomic::Ordering::Relaxed);
    }
    // Everything dropped and all work complete: the engine holds nothing
    // after an explicit cleanup.
    model.streams.lock().unwrap().complete(u64::MAX);
    model.report();
    let _ = model.mm.capture_end();
    model.live.clear();
    model.primed.clear();
    model.graphs.clear();
    model.clones.clear();
    model.guards.clear();
    model.mm.cleanup(true);
    let usage = model.mm.memory_usage();
    assert_eq!(usage.number_allocs, 0);
    assert_eq!(model.mm.stats().leaked_bytes, 0);
    assert_eq!(
        usage.bytes_reserved, 0,
        "an explicit cleanup with nothing live returns every page"
    );
    assert_eq!(model.mm.storage().bytes_allocated(), 0);
    if let Some(vm) = &model.vm {
        let vs = vm.vm_stats();
        let add = |a: &std::sync::atomic::AtomicU64, n| {
            a.fetch_add(n, std::sync::atomic::Ordering::Relaxed)
        };
        add(&CREATES, vs.chunks_created);
        add(&MAPS, vs.maps);
        add(&MULTI_RANGE, u64::from(vs.ranges_reserved > 1));
        assert!(vs.is_idle(), "the VM still holds something: {vs:?}");
        assert_eq!(model.mm.stats().chunks.virtual_bytes, 0);
    }
    let broken = std::mem::take(&mut model.streams.lock().unwrap().broken);
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    if std::env::var_os("MODEL_STATS").is_some() {
        let l = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        eprintln!(
            "moved {} compacted pages {} pinned {} would-allocate {}; arenas: chunks created {} maps {} runs with several ranges {} steps with arena slices {} threshold checks on a caching arena {}; lazy streams: unmaps watched {} (while a use ran: {}) steps with a chunk waiting {}",
            l(&MOVED),
            l(&COMPACTED),
            l(&PINNED),
            l(&WOULD),
            l(&CREATES),
            l(&MAPS),
            l(&MULTI_RANGE),
            l(&ARENA_STEPS),
            l(&CACHING),
            l(&WATCHED),
            l(&WATCHED_OPEN),
            l(&WAITING)
        );
    }
    unmaps
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_programs_keep_every_invariant(which in prop_oneof![Just(0u8), Just(1), Just(2), Just(2)], lazy in any::<bool>(), ops in prop::collection::vec(op(), 1..60)) {
        run(Backend::Plain, which, lazy, ops);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_programs_on_arenas_keep_every_invariant(
        backend in prop_oneof![2 => Just(Backend::HostVm), 1 => Just(Backend::SimVm)],
        which in prop_oneof![3 => Just(3u8), 3 => Just(4), 1 => Just(5), 1 => 0..3u8],
        lazy in any::<bool>(),
        lazy_streams in any::<bool>(),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let _ = run_on_streams(backend, which, lazy, lazy_streams, false, ops);
    }
}

/// Free a two-chunk slice with its write still running, let the idle
/// chunks pass the threshold, and clean up.
fn freed_while_running() -> Vec<Op> {
    vec![
        Op::Reserve(300 * KIB),
        Op::Reserve(100),
        Op::Drop(0),
        Op::Cleanup(true),
        Op::Reserve(500 * KIB),
        Op::Cleanup(true),
    ]
}

#[test]
fn an_engine_told_the_truth_keeps_freed_chunks_until_their_work_completes() {
    let ops = freed_while_running();
    let unmaps = run_on_streams(Backend::HostVm, 3, false, true, false, ops);
    assert_eq!(unmaps, 0, "the write still runs: every chunk stays mapped");
    let mut ops = freed_while_running();
    ops.extend([Op::Complete(3), Op::Cleanup(true)]);
    let unmaps = run_on_streams(Backend::SimVm, 3, false, true, false, ops);
    assert!(unmaps >= 1, "complete: the freed chunks go");
    // Streams that complete at once (never reported): they go at once.
    let unmaps = run_on_streams(
        Backend::HostVm,
        3,
        false,
        false,
        false,
        freed_while_running(),
    );
    assert!(unmaps >= 1);
}

#[test]
#[should_panic(expected = "unmapped under running work")]
fn the_model_catches_an_unmap_under_running_work() {
    // The engine is told the write is complete while it still runs: its
    // explicit cleanup unmaps the freed chunks, which the watcher catches.
    run_on_streams(Backend::HostVm, 3, false, true, true, freed_while_running());
}
