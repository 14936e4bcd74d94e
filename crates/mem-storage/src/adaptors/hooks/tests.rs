//! The hooks' contract on real host memory: told after the map with the
//! bytes reachable, told before the unmap with the bytes still reachable,
//! once per chunk; a refusal undoes the map.

use std::sync::{Arc, Mutex};

use super::{ChunkHooks, HookedVirtualMemory, MappedChunk};
use crate::{HostVirtualMemory, StorageError, VirtualMemory};

/// Records every call and reads the chunk's first byte through the memory
/// inside at each, which works only while the chunk is mapped.
struct Probe {
    vm: Arc<HostVirtualMemory>,
    log: Mutex<Vec<(&'static str, MappedChunk, u8)>>,
    refuse: bool,
}

impl Probe {
    fn touch(&self, what: &'static str, m: MappedChunk) {
        let mut byte = [0u8];
        self.vm
            .read_mapped(m.ptr, &mut byte)
            .unwrap_or_else(|e| panic!("{what}: {:?} is not mapped: {e}", m.chunk));
        self.log.lock().unwrap().push((what, m, byte[0]));
    }
}

impl ChunkHooks for Probe {
    fn mapped(&self, m: MappedChunk) -> Result<(), String> {
        self.touch("mapped", m);
        match self.refuse {
            true => Err("the registration table is full".into()),
            false => Ok(()),
        }
    }
    fn unmapping(&self, m: MappedChunk) {
        self.touch("unmapping", m);
    }
}

fn setup(refuse: bool) -> (Arc<Probe>, HookedVirtualMemory<Arc<HostVirtualMemory>>) {
    let vm = Arc::new(HostVirtualMemory::with_capacity(1 << 30).unwrap());
    let probe = Arc::new(Probe {
        vm: vm.clone(),
        log: Mutex::default(),
        refuse,
    });
    let hooked = HookedVirtualMemory::new(vm, probe.clone());
    (probe, hooked)
}

#[test]
fn each_chunk_is_announced_mapped_and_then_unmapping_while_its_bytes_are_reachable() {
    let (probe, vm) = setup(false);
    let g = vm.granularity();
    let range = vm.reserve_range(4 * g).unwrap();
    let a = vm.create_chunk(g).unwrap();
    let b = vm.create_chunk(2 * g).unwrap();
    let pa = vm.map(range.id, 0, a).unwrap();
    let pb = vm.map(range.id, g, b).unwrap();
    vm.fill_mapped(pb, 7, 1).unwrap();
    // One unmap of both chunks: one call per chunk, each before its unmap.
    let gone = vm.unmap(range.id, 0, 3 * g).unwrap();
    assert_eq!(gone, [a, b]);
    let log = probe.log.lock().unwrap().clone();
    let calls: Vec<_> = log
        .iter()
        .map(|&(w, m, _)| (w, m.chunk.unwrap(), m.ptr, m.bytes))
        .collect();
    assert_eq!(
        calls,
        [
            ("mapped", a, pa, g),
            ("mapped", b, pb, 2 * g),
            ("unmapping", a, pa, g),
            ("unmapping", b, pb, 2 * g),
        ]
    );
    assert_eq!(
        log[3].2, 7,
        "the hook read the chunk's bytes before the unmap"
    );
    vm.release_chunk(a).unwrap();
    vm.release_chunk(b).unwrap();
    vm.free_range(range.id).unwrap();
}

#[test]
fn a_refused_chunk_is_left_unmapped_and_the_refusal_says_why() {
    let (probe, vm) = setup(true);
    let g = vm.granularity();
    let range = vm.reserve_range(2 * g).unwrap();
    let chunk = vm.create_chunk(g).unwrap();
    let err = vm.map(range.id, 0, chunk).unwrap_err();
    assert!(
        matches!(&err, StorageError::HookRefused { what: "chunk", bytes, .. } if *bytes == g),
        "{err}"
    );
    assert!(
        err.to_string().contains("registration table is full"),
        "{err}"
    );
    assert_eq!(vm.vm_stats().mapped_bytes, 0, "nothing stays mapped");
    // The chunk is whole and can be mapped again, or released.
    vm.release_chunk(chunk).unwrap();
    vm.free_range(range.id).unwrap();
    assert_eq!(probe.log.lock().unwrap().len(), 1);
}

#[test]
fn an_unmap_that_is_not_whole_mappings_changes_nothing_and_announces_nothing() {
    let (probe, vm) = setup(false);
    let g = vm.granularity();
    let range = vm.reserve_range(4 * g).unwrap();
    let chunk = vm.create_chunk(2 * g).unwrap();
    vm.map(range.id, 0, chunk).unwrap();
    assert!(vm.unmap(range.id, 0, g).is_err(), "half a mapping");
    assert!(vm.unmap(range.id, 0, 4 * g).is_err(), "past the mapping");
    assert_eq!(probe.log.lock().unwrap().len(), 1, "only the map");
    assert_eq!(vm.vm_stats().mapped_bytes, 2 * g);
    drop(vm); // still mapped: announced unmapping at the drop
    let log = probe.log.lock().unwrap();
    assert_eq!(
        log.last().map(|&(w, m, _)| (w, m.chunk)),
        Some(("unmapping", Some(chunk)))
    );
}

/// Records pages announced and withdrawn; refuses when asked to.
#[derive(Default)]
struct Pages {
    log: Mutex<Vec<(&'static str, MappedChunk)>>,
    refuse: bool,
}

impl ChunkHooks for Pages {
    fn mapped(&self, m: MappedChunk) -> Result<(), String> {
        self.log.lock().unwrap().push(("mapped", m));
        match self.refuse {
            true => Err("no room to register".into()),
            false => Ok(()),
        }
    }
    fn unmapping(&self, m: MappedChunk) {
        self.log.lock().unwrap().push(("unmapping", m));
    }
}

#[test]
fn a_page_is_announced_when_allocated_and_withdrawn_before_its_free_or_the_drop() {
    use crate::{DeviceResource, HookedResource, HostResource, StreamId};
    let hooks = Arc::new(Pages::default());
    let pages = HookedResource::new(HostResource::with_capacity(1 << 20), hooks.clone());
    let a = pages.allocate(4096, StreamId::DEFAULT).unwrap();
    let b = pages.allocate(8192, StreamId::DEFAULT).unwrap();
    pages.deallocate(a, 4096, StreamId::DEFAULT).unwrap();
    drop(pages); // `b` is still allocated: withdrawn at the drop
    let log: Vec<_> = (hooks.log.lock().unwrap().iter())
        .map(|&(w, m)| (w, m.chunk, m.ptr, m.bytes))
        .collect();
    assert_eq!(
        log,
        [
            ("mapped", None, a, 4096),
            ("mapped", None, b, 8192),
            ("unmapping", None, a, 4096),
            ("unmapping", None, b, 8192),
        ]
    );
}

#[test]
fn a_refused_page_is_freed_and_nothing_stays_allocated() {
    use crate::{DeviceResource, HookedResource, HostResource, StreamId};
    let hooks = Arc::new(Pages {
        refuse: true,
        ..Pages::default()
    });
    let host = Arc::new(HostResource::with_capacity(1 << 20));
    let pages = HookedResource::new(host.clone(), hooks);
    let err = pages.allocate(4096, StreamId::DEFAULT).unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::HookRefused {
                what: "page",
                bytes: 4096,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(host.live_allocations(), 0);
}
