//! Random programs over several host streams with real bytes:
//! reserve / write / drop / grow / bind / raw addresses / relocate /
//! reclaim / record-begin / record-end. After every step every live handle
//! reads back exactly what was written, pinned and raw-out allocations did
//! not move, nothing moves while a stream records, and after a reclaim the
//! relocating stream holds exactly the pages its live data lives on.

mod common;

use std::collections::HashSet;

use common::*;
use mem_pools::{IoError, ManagedMemoryBinding, ManagedMemoryHandle};
use mem_relocate::{RelocatingStreams, RelocationReason};
use mem_storage::{ComputeStorage, HostStorage, StorageId};
use proptest::prelude::*;

const STREAMS: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    Reserve { stream: usize, size: u64, seed: u64 },
    Grow { stream: usize, seed: u64 },
    Write { pick: usize, seed: u64 },
    Drop { pick: usize },
    Bind { pick: usize, onto: usize },
    Raw { pick: usize },
    ReleaseRaw { pick: usize },
    Relocate { reason: usize },
    RelocateDevice { reason: usize },
    WhenWanted { capacity_kib: u64 },
    SetRelocating { stream: usize },
    Reclaim,
    RecordBegin { stream: usize },
    RecordEnd { stream: usize },
    DropGraph { pick: usize },
}

fn op() -> impl Strategy<Value = Op> {
    let stream = 0..STREAMS;
    prop_oneof![
        6 => (stream.clone(), 1..12 * KIB, any::<u64>())
            .prop_map(|(stream, size, seed)| Op::Reserve { stream, size, seed }),
        4 => (stream.clone(), any::<u64>()).prop_map(|(stream, seed)| Op::Grow { stream, seed }),
        2 => (any::<usize>(), any::<u64>()).prop_map(|(pick, seed)| Op::Write { pick, seed }),
        3 => any::<usize>().prop_map(|pick| Op::Drop { pick }),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(pick, onto)| Op::Bind { pick, onto }),
        1 => any::<usize>().prop_map(|pick| Op::Raw { pick }),
        1 => any::<usize>().prop_map(|pick| Op::ReleaseRaw { pick }),
        4 => (0..4usize).prop_map(|reason| Op::Relocate { reason }),
        2 => (0..4usize).prop_map(|reason| Op::RelocateDevice { reason }),
        2 => (32..1024u64).prop_map(|capacity_kib| Op::WhenWanted { capacity_kib }),
        1 => stream.clone().prop_map(|stream| Op::SetRelocating { stream }),
        2 => Just(Op::Reclaim),
        1 => stream.clone().prop_map(|stream| Op::RecordBegin { stream }),
        1 => stream.prop_map(|stream| Op::RecordEnd { stream }),
        1 => any::<usize>().prop_map(|pick| Op::DropGraph { pick }),
    ]
}

struct Live {
    stream: usize,
    handle: ManagedMemoryHandle,
    /// Taken when reserved: it must keep resolving through every move.
    binding: ManagedMemoryBinding,
    seed: u64,
    /// Where its raw address points, while one is out.
    raw: Option<(StorageId, u64)>,
}

struct Graph {
    stream: usize,
    pins: Vec<(ManagedMemoryHandle, (StorageId, u64))>,
}

struct World {
    set: TestStreams<HostStorage>,
    live: Vec<Live>,
    graphs: Vec<Graph>,
}

impl World {
    fn new() -> Self {
        Self {
            set: host_set(STREAMS),
            live: Vec::new(),
            graphs: Vec::new(),
        }
    }

    fn places(&mut self) -> Vec<(StorageId, u64)> {
        let set = &mut self.set;
        self.live
            .iter()
            .map(|l| place(set.memory(l.stream).unwrap(), &l.handle))
            .collect()
    }

    fn apply(&mut self, op: Op) {
        let reason = |i: usize| RelocationReason::ALL[i % 4];
        match op {
            Op::Reserve { stream, size, seed } => self.reserve(stream, size, seed),
            Op::Grow { stream, seed } => {
                let next = self
                    .set
                    .memory(stream)
                    .unwrap()
                    .relocation_state()
                    .next_page_size;
                self.reserve(stream, (next + 256).min(256 * KIB), seed);
            }
            Op::Write { pick, seed } if !self.live.is_empty() => {
                let n = self.live.len();
                let l = &mut self.live[pick % n];
                let mm = self.set.memory(l.stream).unwrap();
                mm.write(l.handle.binding(), &pattern(seed, l.handle.size() as usize))
                    .unwrap();
                l.seed = seed;
            }
            Op::Drop { pick } if !self.live.is_empty() => {
                self.live.swap_remove(pick % self.live.len());
            }
            Op::Bind { pick, onto } if self.live.len() > 1 => {
                let (i, j) = (pick % self.live.len(), onto % self.live.len());
                if i == j || self.live[i].stream != self.live[j].stream {
                    return;
                }
                let moved = self.live.swap_remove(i);
                let j = if j == self.live.len() { i } else { j };
                let dst = self.live[j].handle.clone();
                let (stale, mm) = (moved.binding, self.set.memory(moved.stream).unwrap());
                // Refused (the slice is shared with a graph, or `dst`'s memory
                // is pinned), the handle given is dropped with the entry.
                match mm.bind(moved.handle, dst, 1) {
                    Ok(()) => {
                        assert!(matches!(
                            mm.get_storage(stale),
                            Err(IoError::StaleBinding { .. })
                        ));
                        self.live[j].seed = moved.seed;
                        self.live[j].raw = moved.raw;
                    }
                    Err(IoError::SharedReserved { .. } | IoError::AssignedPinned { .. }) => {}
                    Err(err) => panic!("bind failed: {err}"),
                }
            }
            Op::Raw { pick } if !self.live.is_empty() => {
                let n = self.live.len();
                let l = &mut self.live[pick % n];
                let mm = self.set.memory(l.stream).unwrap();
                mm.get_resource(l.handle.binding(), None, None).unwrap();
                l.raw = Some(place(mm, &l.handle));
            }
            Op::ReleaseRaw { pick } if !self.live.is_empty() => {
                let n = self.live.len();
                let l = &mut self.live[pick % n];
                let mm = self.set.memory(l.stream).unwrap();
                mm.release_raw(l.handle.binding()).unwrap();
                l.raw = None;
            }
            Op::Relocate { reason: r } => self.relocation(|s| s.relocate(reason(r))),
            Op::RelocateDevice { reason: r } => self.relocation(|s| s.relocate_device(reason(r))),
            Op::WhenWanted { capacity_kib } => {
                self.set.set_capacity(Some(capacity_kib * KIB));
                self.relocation(|s| s.relocate_when_wanted());
            }
            Op::SetRelocating { stream } => self.set.set_relocating(stream).unwrap(),
            Op::Reclaim => self.reclaim(),
            Op::RecordBegin { stream } => {
                let _ = self.set.begin_recording(stream);
            }
            Op::RecordEnd { stream } => {
                if let Ok(pins) = self.set.end_recording(stream) {
                    let mm = self.set.memory(stream).unwrap();
                    let pins = pins
                        .into_iter()
                        .map(|h| {
                            let at = place(mm, &h);
                            (h, at)
                        })
                        .collect();
                    self.graphs.push(Graph { stream, pins });
                }
            }
            Op::DropGraph { pick } if !self.graphs.is_empty() => {
                self.graphs.swap_remove(pick % self.graphs.len());
            }
            _ => {}
        }
    }

    fn reserve(&mut self, stream: usize, size: u64, seed: u64) {
        let mm = self.set.memory(stream).unwrap();
        let handle = written(mm, size, seed);
        self.live.push(Live {
            stream,
            binding: handle.binding(),
            handle,
            seed,
            raw: None,
        });
    }

    /// Run a relocation; while a stream records nothing may move.
    fn relocation(&mut self, run: impl FnOnce(&mut TestStreams<HostStorage>)) {
        let recording = self.set.recording();
        let (attempts, before) = (self.set.log().attempts, self.places());
        run(&mut self.set);
        assert_eq!(
            self.set.log().failures,
            0,
            "{:?}",
            self.set.log().last_error
        );
        if recording {
            assert_eq!(self.set.log().attempts, attempts);
            assert_eq!(self.places(), before, "nothing moves while a graph records");
        }
    }

    fn reclaim(&mut self) {
        let recording = self.set.recording();
        let before = self.places();
        let result = self.set.reclaim();
        if recording {
            assert!(result.is_err());
            assert_eq!(self.places(), before);
            return;
        }
        result.unwrap();
        // Every page the relocating stream still holds holds live data.
        let r = self.set.relocating();
        let mut pages: HashSet<StorageId> = HashSet::new();
        for l in self.live.iter().filter(|l| l.stream == r) {
            pages.insert(place(self.set.memory(r).unwrap(), &l.handle).0);
        }
        for g in self.graphs.iter().filter(|g| g.stream == r) {
            pages.extend(g.pins.iter().map(|p| p.1.0));
        }
        let mm = self.set.memory(r).unwrap();
        let usage = mm.memory_usage();
        assert_eq!(usage.bytes_reserved, mm.storage().bytes_allocated());
        assert_eq!(
            mm.storage().page_count(),
            pages.len(),
            "an unneeded page is held"
        );
    }

    fn check(&mut self) {
        for i in 0..self.live.len() {
            let l = &self.live[i];
            let mm = self.set.memory(l.stream).unwrap();
            assert!(intact(mm, &l.handle, l.seed), "contents changed");
            assert_eq!(
                mm.get_storage(l.binding).unwrap(),
                mm.get_storage(l.handle.binding()).unwrap(),
                "an old binding lost its allocation"
            );
            if let Some(at) = l.raw {
                assert_eq!(place(mm, &l.handle), at, "a raw-out allocation moved");
            }
        }
        for g in &self.graphs {
            let mm = self.set.memory(g.stream).unwrap();
            for (pin, at) in &g.pins {
                assert_eq!(place(mm, pin), *at, "a pinned allocation moved");
            }
        }
        for s in 0..STREAMS {
            let usage = self.set.memory(s).unwrap().memory_usage();
            assert!(usage.bytes_in_use <= usage.bytes_reserved);
        }
    }

    /// Drop everything, end every recording, reclaim every stream: nothing
    /// may be left held.
    fn drain(mut self) {
        self.live.clear();
        self.graphs.clear();
        for s in 0..STREAMS {
            let _ = self.set.end_recording(s);
        }
        for s in 0..STREAMS {
            self.set.set_relocating(s).unwrap();
            self.set.reclaim().unwrap();
        }
        assert_eq!(self.set.bytes_allocated(), 0, "memory was lost");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn every_live_handle_reads_back_what_was_written_after_every_relocation(
        ops in prop::collection::vec(op(), 1..64)
    ) {
        let mut world = World::new();
        for op in ops {
            world.apply(op);
            world.check();
        }
        world.drain();
    }
}
