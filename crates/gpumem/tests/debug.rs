//! Debug modes: poisoning freed memory, bypassing the cache.

mod common;

use common::*;
use gpumem::prelude::*;
use gpumem::storage::ComputeStorage;

fn device(poison: Option<u8>, bypass: bool) -> Device {
    Device::host()
        .poison(poison)
        .bypass_caching(bypass)
        .ignore_env()
        .build()
        .unwrap()
}

/// Write a pattern, drop the handle, let the stream see the free, and read
/// the freed bytes straight from the storage.
fn freed_bytes(device: &Device) -> Vec<u8> {
    let s = device.default_stream();
    let keep_page_alive = s.reserve(64).unwrap();
    let x = s.reserve(4096).unwrap();
    s.write(&x, &pattern(5, 4096)).unwrap();
    let view = s.with_memory(|mm| mm.get_storage(x.binding())).unwrap();
    drop(x);
    let live = s.with_memory(|mm| mm.memory_usage().number_allocs);
    assert_eq!(live, 1, "the free is processed: only the page keeper lives");
    let mut out = vec![0; 4096];
    s.with_memory(|mm| mm.storage().read(&view, &mut out))
        .unwrap();
    drop(keep_page_alive);
    out
}

#[test]
fn poisoned_memory_shows_the_fill_pattern_to_its_next_user() {
    assert_eq!(freed_bytes(&device(Some(0xAB), false)), vec![0xAB; 4096]);
}

#[test]
fn without_poisoning_freed_memory_keeps_its_old_contents() {
    assert_eq!(freed_bytes(&device(None, false)), pattern(5, 4096));
}

#[test]
fn a_reservation_after_a_poisoned_free_reads_the_pattern() {
    let device = device(Some(0x5A), false);
    let s = device.default_stream();
    let x = s.reserve(1024).unwrap();
    s.write(&x, &[1; 1024]).unwrap();
    drop(x);
    let y = s.reserve(1024).unwrap();
    assert_eq!(
        read(&s, &y, 1024),
        vec![0x5A; 1024],
        "the freed slice is reused, poisoned"
    );
}

#[test]
fn bind_poisons_the_memory_it_frees_and_keeps_what_it_binds() {
    let device = device(Some(0xEE), false);
    let s = device.default_stream();
    let tensor = s.reserve(2048).unwrap();
    s.write(&tensor, &[7; 2048]).unwrap();
    let old = s
        .with_memory(|mm| mm.get_storage(tensor.binding()))
        .unwrap();
    let fresh = s.reserve(2048).unwrap();
    s.write(&fresh, &[9; 2048]).unwrap();
    s.bind(fresh, tensor.clone()).unwrap();
    assert_eq!(read(&s, &tensor, 2048), vec![9; 2048]);
    let mut out = vec![0; 2048];
    s.with_memory(|mm| mm.storage().read(&old, &mut out))
        .unwrap();
    assert_eq!(out, vec![0xEE; 2048]);
}

#[test]
fn bypassing_the_cache_makes_every_reservation_a_storage_allocation() {
    let device = device(None, true);
    let s = device.default_stream();
    for _ in 0..5 {
        drop(s.reserve(4096).unwrap());
    }
    s.cleanup();
    let stats = device.stats();
    assert_eq!(stats.storage_allocs, 5);
    assert_eq!(stats.storage_frees, 5);
    assert_eq!(stats.reserved_bytes.current, 0, "nothing stays cached");
}

#[test]
fn with_caching_the_same_loop_allocates_once() {
    let device = device(None, false);
    let s = device.default_stream();
    for _ in 0..5 {
        drop(s.reserve(4096).unwrap());
    }
    assert_eq!(device.stats().storage_allocs, 1);
}

#[test]
fn bypassed_allocations_are_sized_to_the_request_not_a_shared_page() {
    let device = device(None, true);
    let s = device.default_stream();
    let a = s.reserve(1000).unwrap();
    let b = s.reserve(1000).unwrap();
    let pa = s.with_memory(|mm| mm.get_storage(a.binding())).unwrap();
    let pb = s.with_memory(|mm| mm.get_storage(b.binding())).unwrap();
    assert_ne!(pa.id, pb.id, "each buffer has its own storage allocation");
    assert_eq!(device.stats().reserved_bytes.current, 2 * 1024);
}
