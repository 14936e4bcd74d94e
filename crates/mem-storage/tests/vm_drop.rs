//! Dropping a host virtual-memory backend gives everything back: its
//! reservations leave the address space and its memfd is closed. Alone in
//! its own test binary, so no other test's mappings or descriptors can come
//! and go in `/proc/self` while it looks.

#![cfg(target_os = "linux")]

use mem_storage::{HostVirtualMemory, VirtualMemory};

/// Mappings of our memfd in `/proc/self/maps`, and whether any mapping
/// covers `addr`.
fn maps_at(addr: u64) -> (usize, bool) {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let memfd = maps
        .lines()
        .filter(|l| l.contains("memfd:gpumem-vm"))
        .count();
    let covered = maps.lines().any(|l| {
        let span = l.split_whitespace().next().unwrap_or("");
        let (start, end) = span.split_once('-').unwrap_or(("0", "0"));
        let start = u64::from_str_radix(start, 16).unwrap_or(0);
        let end = u64::from_str_radix(end, 16).unwrap_or(0);
        (start..end).contains(&addr)
    });
    (memfd, covered)
}

/// Open descriptors of our memfd.
fn memfds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target.to_string_lossy().contains("memfd:gpumem-vm"))
        .count()
}

#[test]
#[cfg_attr(miri, ignore)]
fn dropping_the_host_backend_unmaps_every_range_and_closes_its_memfd() {
    let fds_before = memfds();
    let vm = HostVirtualMemory::with_granularity(64 << 20, 64 << 10).unwrap();
    let g = vm.granularity();
    let range = vm.reserve_range(16 * g).unwrap();
    let spare = vm.reserve_range(4 * g).unwrap();
    let chunks: Vec<_> = (0..3).map(|_| vm.create_chunk(g).unwrap()).collect();
    vm.map(range.id, 0, chunks[0]).unwrap();
    vm.map(range.id, 5 * g, chunks[1]).unwrap();
    vm.fill_mapped(range.base, 0xCD, g).unwrap();
    let s = vm.vm_stats();
    assert_eq!(
        (s.live_ranges(), s.live_chunks(), s.live_mappings()),
        (2, 3, 2)
    );
    assert_eq!(memfds(), fds_before + 1);
    let (memfd_maps, at_base) = maps_at(range.base.0);
    assert!(
        memfd_maps >= 2 && at_base,
        "the mappings are visible in /proc/self/maps"
    );
    assert!(maps_at(spare.base.0).1, "the spare reservation is too");
    assert!(
        maps_at(range.base.0 + 15 * g).1,
        "and the unmapped end of the range"
    );

    drop(vm);

    assert_eq!(memfds(), fds_before, "the memfd was closed");
    assert_eq!(
        maps_at(range.base.0),
        (0, false),
        "the range left the address space"
    );
    assert!(!maps_at(spare.base.0).1);
    assert!(!maps_at(range.base.0 + 15 * g).1);
}
