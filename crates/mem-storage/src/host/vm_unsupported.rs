//! `HostVirtualMemory` where there is no memfd (every target but Linux).
//!
//! The type exists everywhere so code naming it builds on every target;
//! its constructors answer [`StorageError::Unsupported`], and a value can
//! never exist, so every method is unreachable by construction (it matches
//! on an uninhabited field). Callers fall back to
//! [`crate::SimulatedVirtualMemory`] or to paged pools over
//! [`crate::HostResource`].

use std::convert::Infallible;
use std::sync::Arc;

use crate::error::StorageError;
use crate::id::DevicePtr;
use crate::physical::PhysicalMemory;
use crate::resource::MemInfo;
use crate::vm::{ChunkId, RangeId, VaRange, VirtualMemory, VirtualMemoryStats};

/// Host virtual memory; Linux only (see the Linux build's documentation).
#[derive(Debug)]
pub struct HostVirtualMemory {
    never: Infallible,
}

fn unsupported() -> StorageError {
    StorageError::Unsupported {
        operation: "host virtual memory (needs Linux memfd)",
        backend: "host",
    }
}

impl HostVirtualMemory {
    /// Always [`StorageError::Unsupported`] on this target.
    pub fn new() -> Result<Self, StorageError> {
        Err(unsupported())
    }

    /// Always [`StorageError::Unsupported`] on this target.
    pub fn with_capacity(_capacity: u64) -> Result<Self, StorageError> {
        Err(unsupported())
    }

    /// Always [`StorageError::Unsupported`] on this target.
    pub fn with_granularity(_capacity: u64, _granularity: u64) -> Result<Self, StorageError> {
        Err(unsupported())
    }

    /// Always [`StorageError::Unsupported`] on this target.
    pub fn sharing(_memory: Arc<PhysicalMemory>, _granularity: u64) -> Result<Self, StorageError> {
        Err(unsupported())
    }
}

impl VirtualMemory for HostVirtualMemory {
    fn backend(&self) -> &'static str {
        match self.never {}
    }
    fn granularity(&self) -> u64 {
        match self.never {}
    }
    fn reserve_range(&self, _: u64) -> Result<VaRange, StorageError> {
        match self.never {}
    }
    fn free_range(&self, _: RangeId) -> Result<(), StorageError> {
        match self.never {}
    }
    fn range_info(&self, _: RangeId) -> Result<VaRange, StorageError> {
        match self.never {}
    }
    fn create_chunk(&self, _: u64) -> Result<ChunkId, StorageError> {
        match self.never {}
    }
    fn release_chunk(&self, _: ChunkId) -> Result<(), StorageError> {
        match self.never {}
    }
    fn chunk_bytes(&self, _: ChunkId) -> Result<u64, StorageError> {
        match self.never {}
    }
    fn map(&self, _: RangeId, _: u64, _: ChunkId) -> Result<DevicePtr, StorageError> {
        match self.never {}
    }
    fn unmap(&self, _: RangeId, _: u64, _: u64) -> Result<Vec<ChunkId>, StorageError> {
        match self.never {}
    }
    fn physical_info(&self) -> Result<MemInfo, StorageError> {
        match self.never {}
    }
    fn vm_stats(&self) -> VirtualMemoryStats {
        match self.never {}
    }
    fn write_mapped(&self, _: DevicePtr, _: &[u8]) -> Result<(), StorageError> {
        match self.never {}
    }
    fn read_mapped(&self, _: DevicePtr, _: &mut [u8]) -> Result<(), StorageError> {
        match self.never {}
    }
    fn fill_mapped(&self, _: DevicePtr, _: u8, _: u64) -> Result<(), StorageError> {
        match self.never {}
    }
    fn copy_mapped(&self, _: DevicePtr, _: DevicePtr, _: u64) -> Result<(), StorageError> {
        match self.never {}
    }
}
