//! Chunk hooks on every built-in workload and every shipped trace: each
//! buffer handed out lies in chunks or pages the hook was told of, each is
//! announced once before use and withdrawn once before its unmap or free,
//! and nothing is left announced when the device is gone.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use gpumem::prelude::*;
use gpumem::storage::{ChunkHooks, MappedChunk};
use gpumem_replay::trace::{Event, Mode, TraceFormat, read_trace_file};
use gpumem_replay::workload::{Workload, WorkloadSpec};

/// What a registering library would hold: the announced chunks and pages
/// by address, and every breach of the contract it saw. (Chunks and pages
/// apart: the simulated device's made-up addresses for its pages and its
/// arena ranges overlap.)
#[derive(Default)]
struct Registry {
    chunks: Mutex<BTreeMap<u64, MappedChunk>>,
    pages: Mutex<BTreeMap<u64, MappedChunk>>,
    breaches: Mutex<Vec<String>>,
    announced: Mutex<u64>,
}

impl Registry {
    fn breach(&self, what: String) {
        self.breaches.lock().unwrap().push(what);
    }

    fn of(&self, c: &MappedChunk) -> &Mutex<BTreeMap<u64, MappedChunk>> {
        match c.chunk {
            Some(_) => &self.chunks,
            None => &self.pages,
        }
    }

    /// Whether `ptr..+len` lies in one announced page, or inside announced
    /// chunks that follow each other without a gap (a large buffer spans
    /// several chunks).
    fn covers(&self, ptr: u64, len: u64) -> bool {
        Self::within(&self.pages.lock().unwrap(), ptr, len)
            || Self::within(&self.chunks.lock().unwrap(), ptr, len)
    }

    fn within(chunks: &BTreeMap<u64, MappedChunk>, ptr: u64, len: u64) -> bool {
        let Some((&first, c)) = chunks.range(..=ptr).next_back() else {
            return false;
        };
        let mut end = first + c.bytes;
        while end < ptr + len {
            match chunks.get(&end) {
                Some(next) => end += next.bytes,
                None => return false,
            }
        }
        ptr >= first
    }
}

impl ChunkHooks for Registry {
    fn mapped(&self, c: MappedChunk) -> Result<(), String> {
        *self.announced.lock().unwrap() += u64::from(c.chunk.is_some());
        if let Some(old) = self.of(&c).lock().unwrap().insert(c.ptr.0, c) {
            self.breach(format!("{c:?} announced over {old:?}"));
        }
        Ok(())
    }
    fn unmapping(&self, c: MappedChunk) {
        if self.of(&c).lock().unwrap().remove(&c.ptr.0) != Some(c) {
            self.breach(format!("{c:?} withdrawn but never announced"));
        }
    }
}

/// Drives `events` through a one-stream simulated device whose chunks are
/// announced to a registry, checking every reservation against it.
fn drive(name: &str, events: &[Event]) {
    let registry = Arc::new(Registry::default());
    let device = Device::simulated(256 * GIB)
        .pools(PoolLayout::Arenas)
        .chunk_hooks(registry.clone())
        .ignore_env()
        .build()
        .unwrap();
    let stream = device.default_stream();
    let mut live = std::collections::HashMap::new();
    let mut checked = 0u64;
    for event in events {
        match *event {
            Event::Alloc { id, size, .. } => {
                let Ok(handle) = stream.reserve(size) else {
                    continue;
                };
                let ptr = stream.device_ptr(&handle).unwrap().as_raw();
                assert!(
                    registry.covers(ptr, size.max(1)),
                    "{name}: buffer {ptr:#x}..+{size} is not all in announced chunks"
                );
                checked += 1;
                live.insert(id, handle);
            }
            Event::Free { id } => drop(live.remove(&id)),
            Event::Mode(Mode::Persistent) => stream.mode(MemoryAllocationMode::Persistent),
            Event::Mode(Mode::Auto) => stream.mode(MemoryAllocationMode::Auto),
            Event::Cleanup => stream.cleanup(),
        }
    }
    drop(live);
    stream.cleanup();
    let stats = device.stats();
    assert!(checked > 0, "{name}: nothing was reserved");
    assert_eq!(
        *registry.announced.lock().unwrap(),
        stats.chunks.maps,
        "{name}: one announcement per arena chunk mapped"
    );
    drop((stream, device));
    assert_eq!(
        registry.breaches.lock().unwrap().as_slice(),
        &[] as &[String],
        "{name}"
    );
    assert!(
        registry.chunks.lock().unwrap().is_empty() && registry.pages.lock().unwrap().is_empty(),
        "{name}: every chunk is withdrawn by the time the device is gone"
    );
}

#[test]
fn every_workload_hands_out_only_announced_memory_and_withdraws_it_before_unmapping() {
    for w in Workload::ALL {
        let events = w
            .generate(&WorkloadSpec {
                seed: 1,
                scale: 1.0,
            })
            .unwrap();
        drive(w.name(), &events);
    }
}

#[test]
fn every_shipped_trace_hands_out_only_announced_memory_and_withdraws_it_before_unmapping() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.to_string_lossy().ends_with(".jsonl.gz") {
            continue;
        }
        let trace = read_trace_file(&path, TraceFormat::Auto).unwrap();
        drive(&path.display().to_string(), &trace.events);
        seen += 1;
    }
    assert_eq!(seen, 5, "the five shipped traces");
}
