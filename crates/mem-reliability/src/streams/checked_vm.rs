//! `CheckedVm`: a virtual memory that hands every unmap to the oracle.

use mem_storage::{
    ChunkId, DevicePtr, MemInfo, RangeId, StorageError, VaRange, VirtualMemory, VirtualMemoryStats,
};

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
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    fn granularity(&self) -> u64 {
        self.inner.granularity()
    }
    fn holds_memory(&self) -> bool {
        self.inner.holds_memory()
    }
    fn reserve_range(&self, bytes: u64) -> Result<VaRange, StorageError> {
        self.inner.reserve_range(bytes)
    }
    fn free_range(&self, range: RangeId) -> Result<(), StorageError> {
        let span = self.inner.range_info(range);
        self.inner.free_range(range)?;
        if let Ok(r) = span {
            self.log.check_unmap(r.base.0, r.base.0 + r.len);
        }
        Ok(())
    }
    fn range_info(&self, range: RangeId) -> Result<VaRange, StorageError> {
        self.inner.range_info(range)
    }
    fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
        self.inner.create_chunk(bytes)
    }
    fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError> {
        self.inner.release_chunk(chunk)
    }
    fn chunk_bytes(&self, chunk: ChunkId) -> Result<u64, StorageError> {
        self.inner.chunk_bytes(chunk)
    }
    fn map(&self, range: RangeId, offset: u64, chunk: ChunkId) -> Result<DevicePtr, StorageError> {
        self.inner.map(range, offset, chunk)
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
    fn physical_info(&self) -> Result<MemInfo, StorageError> {
        self.inner.physical_info()
    }
    fn vm_stats(&self) -> VirtualMemoryStats {
        self.inner.vm_stats()
    }
    fn write_mapped(&self, dst: DevicePtr, data: &[u8]) -> Result<(), StorageError> {
        self.inner.write_mapped(dst, data)
    }
    fn read_mapped(&self, src: DevicePtr, out: &mut [u8]) -> Result<(), StorageError> {
        self.inner.read_mapped(src, out)
    }
    fn fill_mapped(&self, dst: DevicePtr, value: u8, bytes: u64) -> Result<(), StorageError> {
        self.inner.fill_mapped(dst, value, bytes)
    }
    fn copy_mapped(&self, src: DevicePtr, dst: DevicePtr, bytes: u64) -> Result<(), StorageError> {
        self.inner.copy_mapped(src, dst, bytes)
    }
}
