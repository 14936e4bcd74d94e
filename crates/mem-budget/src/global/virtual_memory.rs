//! `BudgetedVirtualMemory`: physical chunks charged to a device budget.
//!
//! Arena pools take physical memory as chunks of a
//! [`VirtualMemory`] rather than as resource
//! allocations, so the [`GlobalDeviceBudget`](crate::GlobalDeviceBudget) adaptor never sees them. This
//! adaptor charges every `create_chunk` on the same ledger (claim, create,
//! confirm — or roll back on a refusal) and refunds every `release_chunk`,
//! so pages and chunks of one device share one exact cap. Reserving address
//! space and mapping cost no memory and are forwarded untouched.

use std::sync::Arc;

use mem_storage::{ChunkId, MemInfo, StorageError, VirtualMemory};

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
    fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
        self.shared
            .charge(bytes, || self.upstream.create_chunk(bytes))
    }

    fn create_shareable_chunk(
        &self,
        bytes: u64,
        handles: mem_storage::ShareHandles,
    ) -> Result<(ChunkId, mem_storage::ShareHandles), StorageError> {
        self.shared.charge(bytes, || {
            self.upstream.create_shareable_chunk(bytes, handles)
        })
    }

    // Imported chunks are not charged (the exporter's budget holds them),
    // so `import_chunk` and `release_imported` pass through, and the
    // backend refuses `release_chunk` of one before anything is refunded.
    fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError> {
        let bytes = self.upstream.chunk_bytes(chunk)?;
        let released = self.upstream.release_chunk(chunk);
        self.shared.refund(bytes, released, || chunk.to_string())
    }

    fn physical_info(&self) -> Result<MemInfo, StorageError> {
        let below = self.upstream.physical_info()?;
        let ledger = &self.shared.ledger;
        Ok(MemInfo {
            free: below.free.min(ledger.remaining()),
            total: below.total.min(ledger.limit()),
        })
    }

    mem_storage::forward_virtual_memory!(
        upstream: backend, granularity, holds_memory, reserve_range, free_range, range_info,
        chunk_bytes, map, unmap, vm_stats, write_mapped, read_mapped, fill_mapped, copy_mapped,
        share_granularity, export_chunk, import_chunk, release_imported
    );
}
