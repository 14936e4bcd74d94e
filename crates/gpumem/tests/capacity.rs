//! One physical capacity per device, shared by pages and arena chunks, as
//! `cuMemAlloc` and `cuMemCreate` share a GPU's memory: on the simulated
//! and host backends without a budget, a device of N bytes never holds more
//! than N in pages (the persistent pool) and chunks (the arenas) together,
//! `mem_info` counts both, and the out-of-memory retry gives idle chunks
//! back to make room for a page and idle pages back for a chunk.

use gpumem::device::DeviceBuilder;
use gpumem::error::Refuser;
use gpumem::prelude::*;

/// 32 chunks of 2 MiB: enough for `pools: auto` to choose arenas.
const N: u64 = 64 * MIB;
const BUFFER: u64 = 4 * MIB;

fn devices() -> Vec<(&'static str, Device)> {
    let build = |builder: DeviceBuilder| builder.ignore_env().build().unwrap();
    let devices = vec![
        ("sim", build(Device::simulated(N))),
        ("host", build(Device::host_with_capacity(N))),
    ];
    for (name, device) in &devices {
        let report = device.memory_report();
        assert!(report.virtual_memory.is_some(), "{name}: arenas on");
        assert!(!device.budget().is_finite(), "{name}: no budget");
    }
    devices
}

/// Reserve `BUFFER`s on stream 0 until the device refuses; the refusal
/// must be the device's typed out-of-memory report.
fn fill(device: &Device, persistent: bool) -> Vec<ManagedMemoryHandle> {
    let s = device.default_stream();
    let _window = persistent.then(|| s.persistent());
    let mut held = Vec::new();
    loop {
        match s.reserve(BUFFER) {
            Ok(handle) => held.push(handle),
            Err(GpuMemError::OutOfMemory(report)) => {
                assert_eq!(report.refused_by, Refuser::Device);
                assert!(report.device_free < BUFFER, "{report}");
                assert_eq!(report.device_total, N);
                return held;
            }
            Err(other) => panic!("expected out of memory, got {other}"),
        }
    }
}

/// Pages and chunks held now, as the device sees them, within N; and free
/// memory as `mem_info` reports it is what they leave.
fn holds_at_most_n(name: &str, device: &Device) {
    let stats = device.stats();
    let reserved = stats.reserved_bytes.current;
    assert!(reserved <= N, "{name}: {reserved} B reserved on {N} B");
    assert!(stats.reserved_bytes.peak <= N, "{name}: peak {stats:?}");
    let info = device.mem_info().unwrap();
    assert_eq!(info.total, N, "{name}");
    assert_eq!(
        info.free,
        N - reserved,
        "{name}: free counts pages and chunks"
    );
}

#[test]
fn a_device_of_n_bytes_never_holds_more_than_n_in_pages_and_chunks_together() {
    for (name, device) in devices() {
        // Live data in the arena's chunks, then in persistent pages: the
        // pages get only what the chunks left.
        let chunks = fill(&device, false);
        assert!(!chunks.is_empty(), "{name}");
        holds_at_most_n(name, &device);
        let pages = fill(&device, true);
        holds_at_most_n(name, &device);
        let live = (chunks.len() + pages.len()) as u64 * BUFFER;
        assert!(live <= N, "{name}: {live} B live on a {N} B device");
        drop((chunks, pages));
        device.reclaim().unwrap();
        assert_eq!(device.mem_info().unwrap().free, N, "{name}: all back");
    }
}

#[test]
fn a_page_refused_because_chunks_fill_the_device_succeeds_after_the_oom_retry_releases_idle_chunks()
{
    for (name, device) in devices() {
        let chunks = fill(&device, false);
        assert!(chunks.len() as u64 * BUFFER > N / 2, "{name}");
        drop(chunks);
        device.drain();
        // The arena keeps its chunks, idle, until a cleanup.
        assert_eq!(device.mem_info().unwrap().free, 0, "{name}");
        let before = device.stats();
        let s = device.default_stream();
        let window = s.persistent();
        let page = s
            .reserve(N / 2)
            .expect("the retry releases the arena's idle chunks");
        drop(window);
        let stats = device.stats();
        let retries = stats.num_alloc_retries - before.num_alloc_retries;
        assert_eq!(retries, 1, "{name}: one retry");
        assert_eq!(stats.num_ooms, before.num_ooms, "{name}: and no error");
        holds_at_most_n(name, &device);
        drop(page);
    }
}

#[test]
fn a_chunk_refused_because_pages_fill_the_device_succeeds_after_the_oom_retry_releases_idle_pages()
{
    for (name, device) in devices() {
        let pages = fill(&device, true);
        assert!(pages.len() as u64 * BUFFER > N / 2, "{name}");
        drop(pages);
        device.drain();
        // The persistent pool keeps its free pages until a cleanup.
        assert!(device.mem_info().unwrap().free < N / 2, "{name}");
        let retries = device.stats().num_alloc_retries;
        let buffer = device
            .default_stream()
            .reserve(N / 2)
            .expect("the retry returns the persistent pool's free pages");
        let stats = device.stats();
        assert_eq!(stats.num_alloc_retries, retries + 1, "{name}: one retry");
        holds_at_most_n(name, &device);
        drop(buffer);
    }
}
