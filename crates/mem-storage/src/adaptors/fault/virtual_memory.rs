//! [`FaultInjection`] over a [`VirtualMemory`]: fail the k-th reserve,
//! free, create, release, map or unmap (or byte access), to test that every
//! failure of an arena leaves it consistent.
//!
//! As for allocations, a failed call never reaches the backend, so it
//! changes nothing there. A plan sees map and unmap with the address in the
//! range and the bytes involved (for map, the chunk's size, asked of the
//! backend first), so a predicate can pick "every map above 1 GiB".
//! Queries (`range_info`, `chunk_bytes`, `vm_stats`, `granularity`) are
//! never counted or failed; `physical_info` counts as `MemInfo`.

use crate::adaptors::fault::FaultInjection;
use crate::adaptors::fault::plan::Operation;
use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};
use crate::resource::MemInfo;
use crate::vm::{ChunkId, RangeId, VaRange, VirtualMemory, VirtualMemoryStats};

const S: StreamId = StreamId::DEFAULT;

impl<V: VirtualMemory> FaultInjection<V> {
    /// The address `offset` bytes into `range`, if it is live.
    fn at(&self, range: RangeId, offset: u64) -> Option<DevicePtr> {
        self.inner().range_info(range).ok()?.at(offset)
    }
}

impl<V: VirtualMemory> VirtualMemory for FaultInjection<V> {
    fn backend(&self) -> &'static str {
        self.inner().backend()
    }
    fn granularity(&self) -> u64 {
        self.inner().granularity()
    }
    fn holds_memory(&self) -> bool {
        self.inner().holds_memory()
    }
    fn reserve_range(&self, bytes: u64) -> Result<VaRange, StorageError> {
        self.gate(Operation::ReserveRange, bytes, None, S)?;
        self.inner().reserve_range(bytes)
    }
    fn free_range(&self, range: RangeId) -> Result<(), StorageError> {
        let info = self.inner().range_info(range).ok();
        let (bytes, base) = info.map_or((0, None), |r| (r.len, Some(r.base)));
        self.gate(Operation::FreeRange, bytes, base, S)?;
        self.inner().free_range(range)
    }
    fn range_info(&self, range: RangeId) -> Result<VaRange, StorageError> {
        self.inner().range_info(range)
    }
    fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
        self.gate(Operation::CreateChunk, bytes, None, S)?;
        self.inner().create_chunk(bytes)
    }
    fn create_shareable_chunk(
        &self,
        bytes: u64,
        handles: crate::ShareHandles,
    ) -> Result<(ChunkId, crate::ShareHandles), StorageError> {
        self.gate(Operation::CreateChunk, bytes, None, S)?;
        self.inner().create_shareable_chunk(bytes, handles)
    }
    crate::forward_virtual_memory!(
        inner: share_granularity, export_chunk, import_chunk, release_imported
    );
    fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError> {
        let bytes = self.inner().chunk_bytes(chunk).unwrap_or(0);
        self.gate(Operation::ReleaseChunk, bytes, None, S)?;
        self.inner().release_chunk(chunk)
    }
    fn chunk_bytes(&self, chunk: ChunkId) -> Result<u64, StorageError> {
        self.inner().chunk_bytes(chunk)
    }
    fn map(&self, range: RangeId, offset: u64, chunk: ChunkId) -> Result<DevicePtr, StorageError> {
        let bytes = self.inner().chunk_bytes(chunk).unwrap_or(0);
        self.gate(Operation::Map, bytes, self.at(range, offset), S)?;
        self.inner().map(range, offset, chunk)
    }
    fn unmap(&self, range: RangeId, offset: u64, bytes: u64) -> Result<Vec<ChunkId>, StorageError> {
        self.gate(Operation::Unmap, bytes, self.at(range, offset), S)?;
        self.inner().unmap(range, offset, bytes)
    }
    fn physical_info(&self) -> Result<MemInfo, StorageError> {
        self.gate(Operation::MemInfo, 0, None, S)?;
        self.inner().physical_info()
    }
    fn vm_stats(&self) -> VirtualMemoryStats {
        self.inner().vm_stats()
    }
    fn write_mapped(&self, dst: DevicePtr, data: &[u8]) -> Result<(), StorageError> {
        self.gate(Operation::Write, data.len() as u64, Some(dst), S)?;
        self.inner().write_mapped(dst, data)
    }
    fn read_mapped(&self, src: DevicePtr, out: &mut [u8]) -> Result<(), StorageError> {
        self.gate(Operation::Read, out.len() as u64, Some(src), S)?;
        self.inner().read_mapped(src, out)
    }
    fn fill_mapped(&self, dst: DevicePtr, value: u8, bytes: u64) -> Result<(), StorageError> {
        self.gate(Operation::Fill, bytes, Some(dst), S)?;
        self.inner().fill_mapped(dst, value, bytes)
    }
    fn copy_mapped(&self, src: DevicePtr, dst: DevicePtr, bytes: u64) -> Result<(), StorageError> {
        self.gate(Operation::Copy, bytes, Some(dst), S)?;
        self.inner().copy_mapped(src, dst, bytes)
    }
}
