//! A stream whose growable pool has left a live slice on an outdated page.

use mem_pools::ManagedMemoryHandle;
use mem_storage::HostStorage;

use super::{KIB, TestStreams, written};

/// Stream 0 holds `old` (1 KiB, seed 1) on an outdated 4 KiB page and
/// `big` (`big` bytes, seed 2) on the current 8 KiB page.
pub fn grown(
    set: &mut TestStreams<HostStorage>,
    big: u64,
) -> (ManagedMemoryHandle, ManagedMemoryHandle) {
    let mm = set.memory(0).unwrap();
    let old = written(mm, KIB, 1);
    let big = written(mm, big, 2);
    assert!(mm.has_outdated());
    (old, big)
}
