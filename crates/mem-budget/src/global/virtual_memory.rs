//! `BudgetedVirtualMemory`: physical chunks charged to a device budget.
//!
//! Arena pools take physical memory as chunks of a
//! [`VirtualMemory`](mem_storage::VirtualMemory) rather than as resource
//! allocations, so the [`GlobalDeviceBudget`] adaptor never sees them. This
//! adaptor charges every `create_chunk` on the same ledger (claim, create,
//! confirm — or roll back on a refusal) and refunds every `release_chunk`,
//! so pages and chunks of one device share one exact cap. Reserving address
//! space and mapping cost no memory and are forwarded untouched.

use std::sync::Arc;

use mem_storage::{
    ChunkId, DevicePtr, MemInfo, RangeId, StorageError, VaRange, VirtualMemory, VirtualMemoryStats,
};

use crate::global_handle::Shared;

/// A [`VirtualMemory`] whose chunks are charged to a device budget.
#[derive(Debug)]
pub struct BudgetedVirtualMemory {
    pub(crate) upstream: Arc<dyn VirtualMemory>,
    pub(crate) shared: Arc<Shared>,
}

impl BudgetedVirtualMemory {
    /// The virtual memory below.
    pub fn upstream(&self) -> &Arc<dyn VirtualMemory> {
        &self.upstream
    }
}

impl VirtualMemory for BudgetedVirtualMemory {
    fn backend(&self) -> &'static str {
        self.upstream.backend()
    }

    fn granularity(&self) -> u64 {
        self.upstream.granularity()
    }

    fn holds_memory(&self) -> bool {
        self.upstream.holds_memory()
    }

    fn reserve_range(&self, bytes: u64) -> Result<VaRange, StorageError> {
        self.upstream.reserve_range(bytes)
    }

    fn free_range(&self, range: RangeId) -> Result<(), StorageError> {
        self.upstream.free_range(range)
    }

    fn range_info(&self, range: RangeId) -> Result<VaRange, StorageError> {
        self.upstream.range_info(range)
    }

    fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
        self.shared
            .charge(bytes, || self.upstream.create_chunk(bytes))
    }

    fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError> {
        let bytes = self.upstream.chunk_bytes(chunk)?;
        let released = self.upstream.release_chunk(chunk);
        self.shared.refund(bytes, released, || chunk.to_string())
    }

    fn chunk_bytes(&self, chunk: ChunkId) -> Result<u64, StorageError> {
        self.upstream.chunk_bytes(chunk)
    }

    fn map(&self, range: RangeId, offset: u64, chunk: ChunkId) -> Result<DevicePtr, StorageError> {
        self.upstream.map(range, offset, chunk)
    }

    fn unmap(&self, range: RangeId, offset: u64, bytes: u64) -> Result<Vec<ChunkId>, StorageError> {
        self.upstream.unmap(range, offset, bytes)
    }

    fn physical_info(&self) -> Result<MemInfo, StorageError> {
        let below = self.upstream.physical_info()?;
        let ledger = &self.shared.ledger;
        Ok(MemInfo {
            free: below.free.min(ledger.remaining()),
            total: below.total.min(ledger.limit()),
        })
    }

    fn vm_stats(&self) -> VirtualMemoryStats {
        self.upstream.vm_stats()
    }

    fn write_mapped(&self, dst: DevicePtr, data: &[u8]) -> Result<(), StorageError> {
        self.upstream.write_mapped(dst, data)
    }

    fn read_mapped(&self, src: DevicePtr, out: &mut [u8]) -> Result<(), StorageError> {
        self.upstream.read_mapped(src, out)
    }

    fn fill_mapped(&self, dst: DevicePtr, value: u8, bytes: u64) -> Result<(), StorageError> {
        self.upstream.fill_mapped(dst, value, bytes)
    }

    fn copy_mapped(&self, src: DevicePtr, dst: DevicePtr, bytes: u64) -> Result<(), StorageError> {
        self.upstream.copy_mapped(src, dst, bytes)
    }
}
