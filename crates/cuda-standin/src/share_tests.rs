use std::os::fd::AsFd;

use super::*;
use crate::memory::{AllocKind, GRANULARITY};
use crate::types::{INVALID_VALUE, NOT_FOUND};

const G: u64 = GRANULARITY;

fn code<T>(r: Result<T, Refusal>) -> u32 {
    r.err().expect("refused").0
}

#[test]
fn an_imported_chunk_shares_its_bytes_and_outlives_the_exporters_release() {
    let mut m = MemState::new(64 * G);
    let plain = m.create(G, 0, 0, false).unwrap();
    assert_eq!(code(m.export(plain)), INVALID_VALUE, "not made shareable");
    let h = m.create(G, 0, HANDLE_POSIX_FD, true).unwrap();
    assert_eq!(m.properties(h), Some((0, HANDLE_POSIX_FD, true)));
    let fd = m.export(h).unwrap();
    let imported = m.import(fd.as_fd()).unwrap();
    let at = m.reserve(2 * G, 0).unwrap();
    m.map(at, G, 0, h).unwrap();
    m.map(at + G, G, 0, imported).unwrap();
    m.set_access(at, 2 * G, 0, true).unwrap();
    assert_eq!(m.devices[0].info().0, 62 * G, "an import is not charged");
    let mine = m.resolve(at + 8, 1, 0).unwrap();
    let theirs = m.resolve(at + G + 8, 1, 0).unwrap();
    // SAFETY: both segments lie in live chunks (just resolved).
    unsafe { mine[0].buf.at(mine[0].offset).write(42) };
    // SAFETY: as above.
    assert_eq!(unsafe { theirs[0].buf.at(theirs[0].offset).read() }, 42);
    m.unmap(at, G).unwrap();
    m.release(h).unwrap();
    m.release(plain).unwrap();
    assert_eq!(m.devices[0].info().0, 64 * G, "the exporter's side is gone");
    // SAFETY: the importer's mapping still holds the file.
    assert_eq!(unsafe { theirs[0].buf.at(theirs[0].offset).read() }, 42);
    m.unmap(at + G, G).unwrap();
    m.release(imported).unwrap();
    m.address_free(at, 2 * G).unwrap();
}

#[test]
fn retain_and_address_range_find_the_chunk_and_allocation_under_an_address() {
    let mut m = MemState::new(64 * G);
    let at = m.reserve(4 * G, 0).unwrap();
    let h = m.create(2 * G, 0, 0, false).unwrap();
    m.map(at + G, 2 * G, 0, h).unwrap();
    assert_eq!(m.address_range(at + G + 5).unwrap(), (at + G, 2 * G));
    assert_eq!(code(m.address_range(at)), NOT_FOUND, "reserved, not mapped");
    assert_eq!(m.retain(at + 2 * G).unwrap(), h);
    m.release(h).unwrap();
    m.release(h).unwrap();
    assert_eq!(m.devices[0].info().0, 62 * G, "held while mapped");
    m.unmap(at + G, 2 * G).unwrap();
    assert_eq!(m.devices[0].info().0, 64 * G, "two refs, two releases");
    let p = m.alloc(1000, AllocKind::Sync, 0).unwrap();
    assert_eq!(m.address_range(p + 999).unwrap(), (p, 1000));
}

#[test]
fn a_device_reaches_another_devices_memory_only_when_given_access() {
    let mut m = MemState::new(64 * G);
    let p = m.alloc(4096, AllocKind::Sync, 0).unwrap();
    assert!(m.resolve(p, 16, 1).is_err(), "no peer access yet");
    m.peers |= crate::device::pair(1, 0);
    assert!(m.resolve(p, 16, 1).is_ok());
    let at = m.reserve(G, 0).unwrap();
    let h = m.create(G, 0, 0, false).unwrap();
    m.map(at, G, 0, h).unwrap();
    m.set_access(at, G, 0, true).unwrap();
    let why = m.resolve(at, 16, 1).unwrap_err();
    assert!(why.contains("device 1"), "{why}");
    assert_eq!(m.access_of(at + 5, 1), Ok(false));
    m.set_access(at, G, 1, true).unwrap();
    assert_eq!(m.access_of(at + 5, 1), Ok(true));
    let segs = m.resolve(at, 16, 1).unwrap();
    m.set_access(at, G, 1, false).unwrap();
    assert!(m.check_live(&segs).is_err(), "revoked under resolved work");
    assert!(m.resolve(at, 16, 0).is_ok(), "device 0 keeps its access");
}

#[test]
fn memory_freed_on_a_stream_takes_no_new_work_before_the_free_runs() {
    let mut m = MemState::new(64 * G);
    let p = m.alloc(4096, AllocKind::Pool, 0).unwrap();
    m.allocs.get_mut(&p).unwrap().freeing = Some(0x50);
    let why = m.resolve(p, 16, 0).unwrap_err();
    assert!(why.contains("cuMemFreeAsync"), "{why}");
}
