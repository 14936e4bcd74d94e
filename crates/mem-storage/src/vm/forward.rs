//! `VirtualMemory` through `Arc`, `Box` and `&`: one backend shared by every
//! pool of a device, or held as a trait object.

use std::sync::Arc;

use crate::error::StorageError;
use crate::id::DevicePtr;
use crate::resource::MemInfo;
use crate::vm::{ChunkId, RangeId, VaRange, VirtualMemory, VirtualMemoryStats};

macro_rules! forward_vm {
    ($ty:ty) => {
        impl<V: VirtualMemory + ?Sized> VirtualMemory for $ty {
            fn backend(&self) -> &'static str {
                (**self).backend()
            }
            fn granularity(&self) -> u64 {
                (**self).granularity()
            }
            fn holds_memory(&self) -> bool {
                (**self).holds_memory()
            }
            fn reserve_range(&self, bytes: u64) -> Result<VaRange, StorageError> {
                (**self).reserve_range(bytes)
            }
            fn free_range(&self, range: RangeId) -> Result<(), StorageError> {
                (**self).free_range(range)
            }
            fn range_info(&self, range: RangeId) -> Result<VaRange, StorageError> {
                (**self).range_info(range)
            }
            fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
                (**self).create_chunk(bytes)
            }
            fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError> {
                (**self).release_chunk(chunk)
            }
            fn chunk_bytes(&self, chunk: ChunkId) -> Result<u64, StorageError> {
                (**self).chunk_bytes(chunk)
            }
            fn map(
                &self,
                range: RangeId,
                offset: u64,
                chunk: ChunkId,
            ) -> Result<DevicePtr, StorageError> {
                (**self).map(range, offset, chunk)
            }
            fn unmap(
                &self,
                range: RangeId,
                offset: u64,
                bytes: u64,
            ) -> Result<Vec<ChunkId>, StorageError> {
                (**self).unmap(range, offset, bytes)
            }
            fn physical_info(&self) -> Result<MemInfo, StorageError> {
                (**self).physical_info()
            }
            fn vm_stats(&self) -> VirtualMemoryStats {
                (**self).vm_stats()
            }
            fn write_mapped(&self, dst: DevicePtr, data: &[u8]) -> Result<(), StorageError> {
                (**self).write_mapped(dst, data)
            }
            fn read_mapped(&self, src: DevicePtr, out: &mut [u8]) -> Result<(), StorageError> {
                (**self).read_mapped(src, out)
            }
            fn fill_mapped(
                &self,
                dst: DevicePtr,
                value: u8,
                bytes: u64,
            ) -> Result<(), StorageError> {
                (**self).fill_mapped(dst, value, bytes)
            }
            fn copy_mapped(
                &self,
                src: DevicePtr,
                dst: DevicePtr,
                bytes: u64,
            ) -> Result<(), StorageError> {
                (**self).copy_mapped(src, dst, bytes)
            }
        }
    };
}

forward_vm!(Arc<V>);
forward_vm!(Box<V>);
forward_vm!(&V);
