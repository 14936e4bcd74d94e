//! `CheckedVm`: a virtual memory that hands every unmap to the oracle.

use mem_storage::{ChunkId, RangeId, StorageError, VirtualMemory};

use crate::streams::UseLog;

/// Forwards every call to `inner`; after each `unmap` and `free_range`
/// that succeeds, asks [`UseLog::check_unmap`] about the addresses that
/// lost their memory.
#[derive(Debug)]
pub struct CheckedVm<V> {
    inner: V,
    log: UseLog,
}

impl<V: VirtualMemory> CheckedVm<V> {
    /// `inner`, checked against `log`.
    pub fn new(inner: V, log: UseLog) -> Self {
        Self { inner, log }
    }
}

impl<V: VirtualMemory> VirtualMemory for CheckedVm<V> {
    fn free_range(&self, range: RangeId) -> Result<(), StorageError> {
        let span = self.inner.range_info(range);
        self.inner.free_range(range)?;
        if let Ok(r) = span {
            self.log.check_unmap(r.base.0, r.base.0 + r.len);
        }
        Ok(())
    }
    fn unmap(&self, range: RangeId, offset: u64, bytes: u64) -> Result<Vec<ChunkId>, StorageError> {
        let base = self.inner.range_info(range);
        let chunks = self.inner.unmap(range, offset, bytes)?;
        if let Ok(r) = base {
            let lo = r.base.0 + offset;
            self.log.check_unmap(lo, lo + bytes);
        }
        Ok(chunks)
    }
    mem_storage::forward_virtual_memory!(inner: reserve_range, create_chunk, release_chunk, map);
    mem_storage::forward_virtual_memory!(inner);
}
