//! Model-based property test: random programs of reserve / drop / write /
//! bind / mode / cleanup / install / capture / raw addresses / relocation,
//! on host storage with real bytes, checked against a simple model after
//! every step.
//!
//! Invariants checked after every step: every live allocation reads back
//! its own pattern; no two live allocations overlap; each lies inside its
//! page and is aligned; Σ live ≤ reserved; the engine's usage equals the
//! model's; memory with a raw address out or pinned by a graph never moves.

mod common;

use std::collections::{HashMap, HashSet};

use common::*;
use mem_pools::{
    InstallMemoryPoolsError, IoError, ManagedMemoryBinding, ManagedMemoryHandle,
    MemoryAllocationMode, MemoryConfiguration, MemoryManagement, MemoryPoolOptions, PoolType,
    RawPin, RelocationCopyError, StorageCopyQueue, TargetRoom,
};
use mem_storage::{ComputeStorage, HostStorage, StorageHandle};
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
        1 => (0..3u8).prop_map(Op::Install),
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
    ]
}

fn config(which: u8) -> MemoryConfiguration {
    match which {
        0 => MemoryConfiguration::SubSlices,
        1 => MemoryConfiguration::ExclusivePages,
        _ => MemoryConfiguration::Custom {
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
    }
}

struct Live {
    handle: ManagedMemoryHandle,
    seed: u64,
    persistent: bool,
    raw: bool,
}

struct Model {
    mm: MemoryManagement<HostStorage>,
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
}

const CHECKED: usize = 4096;
static MOVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// Pages given back by commits of compaction plans.
static COMPACTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static PINNED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static WOULD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Model {
    fn persistent_now(&self) -> bool {
        self.depth > 0 || self.capture.is_some()
    }

    fn write(&mut self, i: usize) {
        self.next_seed += 1;
        let seed = self.next_seed;
        let entry = &mut self.live[i];
        entry.seed = seed;
        let len = (entry.handle.size() as usize).min(CHECKED);
        self.mm
            .write(entry.handle.binding(), &pattern(seed, len))
            .unwrap();
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
        match op {
            Op::Reserve(size) => match self.mm.reserve(size) {
                Ok(handle) => {
                    let persistent = self.persistent_now();
                    if self.capture == Some(true) {
                        self.primed.push((handle.binding(), persistent));
                    }
                    self.live.push(Live {
                        handle,
                        seed: 0,
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
            Op::Cleanup(explicit) => self.mm.cleanup(explicit),
            Op::Install(which) => {
                let dynamic =
                    self.live.iter().any(|l| !l.persistent) || self.primed.iter().any(|(_, p)| !p);
                match self.mm.install_pools(config(which), &props()) {
                    Ok(()) => {
                        assert!(
                            self.capture.is_none() && !dynamic,
                            "installed over live dynamic memory"
                        );
                    }
                    Err(InstallMemoryPoolsError::CaptureActive) => assert!(self.capture.is_some()),
                    Err(InstallMemoryPoolsError::PoolsInUse { live_slices, .. }) => {
                        assert!(live_slices > 0);
                        // Graph handles and clones may hold dynamic memory the live list dropped.
                        let unknown =
                            self.graphs.iter().flatten().count() > 0 || !self.clones.is_empty();
                        assert!(dynamic || unknown, "refused with nothing dynamic live");
                    }
                }
            }
            Op::CaptureBegin => {
                self.mm.capture_begin();
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
        self.mm.drain_drops();
        // Every live allocation reads back its pattern.
        for i in 0..self.live.len() {
            let (b, seed) = (self.live[i].handle.binding(), self.live[i].seed);
            let len = (b.size() as usize).min(CHECKED);
            let mut out = vec![0; len];
            self.mm.read(b, &mut out).unwrap();
            assert_eq!(out, pattern(seed, len), "allocation {i} lost its bytes");
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
        for b in names {
            let Ok(view) = self.mm.get_storage(b) else {
                continue; // a primed allocation that was freed or bound away
            };
            if !seen.insert((b.manager_id(), view.id, view.offset())) {
                continue;
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
    }
}

fn run(which: u8, lazy: bool, ops: Vec<Op>) {
    let mm = if lazy {
        lazy_manager(config(which))
    } else {
        manager(config(which))
    };
    let mut model = Model {
        mm,
        live: Vec::new(),
        primed: Vec::new(),
        graphs: Vec::new(),
        clones: Vec::new(),
        guards: Vec::new(),
        depth: 0,
        capture: None,
        next_seed: 0,
    };
    for op in ops {
        model.apply(op);
        model.check();
    }
    // Everything dropped: the engine holds nothing after an explicit cleanup.
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
    if std::env::var_os("MODEL_STATS").is_some() {
        let l = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        eprintln!(
            "moved {} compacted pages {} pinned {} would-allocate {}",
            l(&MOVED),
            l(&COMPACTED),
            l(&PINNED),
            l(&WOULD)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_programs_keep_every_invariant(which in prop_oneof![Just(0u8), Just(1), Just(2), Just(2)], lazy in any::<bool>(), ops in prop::collection::vec(op(), 1..60)) {
        run(which, lazy, ops);
    }
}
