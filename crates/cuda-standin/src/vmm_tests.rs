use super::*;
use crate::memory::AllocKind;
use crate::types::{ALREADY_MAPPED, INVALID_HANDLE, INVALID_VALUE, NOT_MAPPED, OUT_OF_MEMORY};

const G: u64 = GRANULARITY;

fn mem() -> MemState {
    MemState::new(64 * G)
}

fn code<T>(r: Result<T, Refusal>) -> u32 {
    r.err().expect("refused").0
}

#[test]
fn sizes_addresses_and_offsets_must_be_whole_granules() {
    let mut m = mem();
    assert_eq!(code(m.reserve(G / 2, 0)), INVALID_VALUE);
    assert_eq!(code(m.reserve(0, 0)), INVALID_VALUE);
    assert_eq!(code(m.create(G + 1, 0, 0, false)), INVALID_VALUE);
    let at = m.reserve(4 * G, 0).unwrap();
    assert_eq!(at % G, 0);
    let h = m.create(2 * G, 0, 0, false).unwrap();
    assert_eq!(code(m.map(at + 4096, G, 0, h)), INVALID_VALUE);
    assert_eq!(code(m.map(at, G, 4096, h)), INVALID_VALUE);
    assert_eq!(
        code(m.map(at, 2 * G, G, h)),
        INVALID_VALUE,
        "past the chunk"
    );
    m.map(at, G, G, h).unwrap();
}

#[test]
fn a_map_needs_a_reservation_with_room_and_no_mapping_in_the_way() {
    let mut m = mem();
    let at = m.reserve(2 * G, 0).unwrap();
    let (a, b) = (
        m.create(2 * G, 0, 0, false).unwrap(),
        m.create(G, 0, 0, false).unwrap(),
    );
    assert_eq!(
        code(m.map(at + 2 * G, G, 0, b)),
        INVALID_VALUE,
        "past the end"
    );
    assert_eq!(code(m.map(at + G, 2 * G, 0, a)), INVALID_VALUE, "runs out");
    m.map(at, 2 * G, 0, a).unwrap();
    assert_eq!(code(m.map(at + G, G, 0, b)), ALREADY_MAPPED);
    assert_eq!(code(m.map(at, G, 0, 999)), INVALID_HANDLE);
}

#[test]
fn access_unmap_and_free_cover_whole_mappings_only() {
    let mut m = mem();
    let at = m.reserve(3 * G, 0).unwrap();
    let (a, b) = (
        m.create(2 * G, 0, 0, false).unwrap(),
        m.create(G, 0, 0, false).unwrap(),
    );
    m.map(at, 2 * G, 0, a).unwrap();
    m.map(at + 2 * G, G, 0, b).unwrap();
    assert!(
        m.resolve(at, 16, 0).is_err(),
        "no access before cuMemSetAccess"
    );
    assert_eq!(
        code(m.set_access(at, G, 0, true)),
        INVALID_VALUE,
        "half a mapping"
    );
    m.set_access(at, 3 * G, 0, true).unwrap();
    let segs = m.resolve(at + 2 * G - 8, 16, 0).unwrap();
    assert_eq!(segs.len(), 2, "a span crosses into the next mapping");
    assert_eq!(code(m.unmap(at + G, G)), NOT_MAPPED);
    assert_eq!(
        code(m.address_free(at, 3 * G)),
        INVALID_VALUE,
        "still mapped"
    );
    m.unmap(at, 3 * G).unwrap();
    assert!(
        m.check_live(&segs).is_err(),
        "work resolved before the unmap is caught"
    );
    assert_eq!(code(m.address_free(at, 2 * G)), INVALID_VALUE, "not whole");
    m.address_free(at, 3 * G).unwrap();
}

#[test]
fn a_mapped_chunk_released_keeps_its_memory_until_its_last_unmap() {
    let mut m = mem();
    let at = m.reserve(2 * G, 0).unwrap();
    let h = m.create(G, 0, 0, false).unwrap();
    m.map(at, G, 0, h).unwrap();
    m.map(at + G, G, 0, h).unwrap();
    m.release(h).unwrap();
    assert_eq!(m.devices[0].info().0, 63 * G, "held while mapped");
    assert_eq!(code(m.release(h)), INVALID_VALUE, "released once");
    assert_eq!(code(m.map(at, G, 0, h)), INVALID_HANDLE, "no new mapping");
    m.unmap(at, G).unwrap();
    assert_eq!(m.devices[0].info().0, 63 * G, "one mapping left");
    m.unmap(at + G, G).unwrap();
    assert_eq!(m.devices[0].info().0, 64 * G, "freed with its last unmap");
}

#[test]
fn pages_pool_and_chunks_share_one_capacity_and_the_pool_cache_gives_way() {
    let mut m = mem();
    let p = m.alloc(32 * G, AllocKind::Pool, 0).unwrap();
    m.free(p).unwrap();
    assert_eq!(
        m.devices[0].pool.reserved,
        32 * G,
        "the pool caches what was freed"
    );
    let h = m.create(48 * G, 0, 0, false).unwrap();
    assert_eq!(
        m.devices[0].pool.reserved, 0,
        "the cache was trimmed to make room"
    );
    assert_eq!(code(m.alloc(17 * G, AllocKind::Sync, 0)), OUT_OF_MEMORY);
    m.release(h).unwrap();
    assert_eq!(m.devices[0].info(), (64 * G, 64 * G));
}
