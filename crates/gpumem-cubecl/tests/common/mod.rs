//! A fake CubeCL `ComputeStorage` on host memory, and the helpers the
//! tests share.
#![allow(dead_code, missing_docs)]

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cubecl_environment::backtrace::BackTrace;
use cubecl_ir::MemoryDeviceProperties;
use cubecl_server::logging::ServerLogger;
use cubecl_server::memory_management::relocation::{CopyQueue, StorageCopy};
use cubecl_server::memory_management::{ErrorGraph, MemoryConfiguration};
use cubecl_server::server::{IoError, ServerError};
use cubecl_server::storage::{ComputeStorage, StorageHandle, StorageId, StorageUtilization};
use gpumem_cubecl::{MemoryManagement, MemoryManagementOptions};

pub const MIB: u64 = 1024 * 1024;
pub const PROPS: MemoryDeviceProperties = MemoryDeviceProperties::new(128 * MIB, 32);

/// What the storage resolves a handle to: the bytes of the buffer it names
/// (shared, so a test can read and write them), and the range.
#[derive(Debug, Clone)]
pub struct HostResource {
    pub buffer: Arc<Mutex<Vec<u8>>>,
    pub offset: u64,
    pub size: u64,
}

impl HostResource {
    pub fn write(&self, data: &[u8]) {
        let start = self.offset as usize;
        self.buffer.lock().unwrap()[start..start + data.len()].copy_from_slice(data);
    }

    pub fn read(&self, len: usize) -> Vec<u8> {
        let start = self.offset as usize;
        self.buffer.lock().unwrap()[start..start + len].to_vec()
    }
}

/// Host buffers with CubeCL's storage contract: deallocations wait for
/// `flush`, and allocations past `limit` bytes are `OutOfMemory`.
#[derive(Debug, Default)]
pub struct HostStorage {
    buffers: HashMap<StorageId, Arc<Mutex<Vec<u8>>>>,
    queued: Vec<StorageId>,
    pub limit: Option<u64>,
    pub allocs: u64,
    pub deallocs: u64,
}

impl HostStorage {
    pub fn with_limit(limit: u64) -> Self {
        Self {
            limit: Some(limit),
            ..Self::default()
        }
    }
}

impl HostStorage {
    /// `bytes_allocated`, named apart from the trait's for the tests.
    pub fn bytes_allocated_now(&self) -> u64 {
        ComputeStorage::bytes_allocated(self)
    }
}

impl ComputeStorage for HostStorage {
    type Resource = HostResource;

    fn alignment(&self) -> usize {
        32
    }

    fn get(&mut self, handle: &StorageHandle) -> Result<HostResource, IoError> {
        let buffer = self
            .buffers
            .get(&handle.id)
            .ok_or_else(|| IoError::NotFound {
                backtrace: BackTrace::capture(),
                reason: "no such buffer".into(),
            })?;
        assert!(handle.offset() + handle.size() <= buffer.lock().unwrap().len() as u64);
        Ok(HostResource {
            buffer: buffer.clone(),
            offset: handle.offset(),
            size: handle.size(),
        })
    }

    fn alloc(&mut self, size: u64) -> Result<StorageHandle, IoError> {
        if self
            .limit
            .is_some_and(|limit| self.bytes_allocated() + size > limit)
        {
            return Err(IoError::OutOfMemory {
                size,
                backtrace: BackTrace::capture(),
            });
        }
        let id = StorageId::new();
        self.buffers
            .insert(id, Arc::new(Mutex::new(vec![0; size as usize])));
        self.allocs += 1;
        Ok(StorageHandle::new(
            id,
            StorageUtilization { offset: 0, size },
        ))
    }

    fn dealloc(&mut self, id: StorageId) {
        self.queued.push(id);
    }

    fn flush(&mut self) {
        for id in self.queued.drain(..) {
            if self.buffers.remove(&id).is_some() {
                self.deallocs += 1;
            }
        }
    }

    fn bytes_allocated(&self) -> u64 {
        self.buffers
            .values()
            .map(|buffer| buffer.lock().unwrap().len() as u64)
            .sum()
    }
}

/// Copies between host buffers: landed when `copy` returns.
#[derive(Debug, Default)]
pub struct HostCopies {
    pub copies: usize,
}

impl CopyQueue<HostStorage> for HostCopies {
    fn wait_device(&mut self) -> Result<(), ServerError> {
        Ok(())
    }

    fn copy(&mut self, storage: &mut HostStorage, copy: &StorageCopy) -> Result<(), IoError> {
        let source = storage.get(&copy.source)?;
        let target = storage.get(&copy.target)?;
        target.write(&source.read(source.size as usize));
        self.copies += 1;
        Ok(())
    }

    fn wait_copies(&mut self) -> Result<(), ServerError> {
        Ok(())
    }
}

pub fn memory_with(
    storage: HostStorage,
    properties: &MemoryDeviceProperties,
    config: MemoryConfiguration,
) -> MemoryManagement<HostStorage> {
    MemoryManagement::from_configuration(
        storage,
        properties,
        config,
        Arc::new(ServerLogger::default()),
        MemoryManagementOptions::new("test"),
    )
}

/// CubeCL's default layout (`Adaptive`) over a fresh host storage.
pub fn adaptive() -> MemoryManagement<HostStorage> {
    memory_with(
        HostStorage::default(),
        &PROPS,
        MemoryConfiguration::default(),
    )
}

/// One page per allocation.
pub fn exclusive() -> MemoryManagement<HostStorage> {
    memory_with(
        HostStorage::default(),
        &PROPS,
        MemoryConfiguration::ExclusivePages,
    )
}

pub fn graph() -> ErrorGraph {
    ErrorGraph::default()
}

pub fn generic_error(reason: &str) -> ServerError {
    ServerError::Generic {
        reason: reason.to_string(),
        backtrace: BackTrace::capture(),
    }
}
