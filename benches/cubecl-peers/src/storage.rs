//! A device storage that holds no memory, for one cubecl-server version.
//!
//! cubecl-server's own host storage, `BytesStorage`, backs every page with
//! `alloc_zeroed` memory, and its relocation copies touch it: the 80 GiB
//! workloads would need tens of GiB of RAM, and `mmap`/`munmap` would sit
//! in the timed loop. gpumem's rows replay on its `sim` device, which hands
//! out addresses and holds nothing, so the CubeCL rows get the same: this
//! storage mints ids, counts bytes against the device's capacity and frees
//! at once (`flush` has nothing left to do, as in `BytesStorage`; CUDA's
//! `GpuStorage` queues frees until the stream flushes, which a replay with
//! no kernels never reaches, so freeing at once gives CubeCL its lowest
//! reserved figure).
//!
//! The device-wide counters live in a [`Ledger`] shared by every stream's
//! storage (CubeCL keeps one memory manager, so one storage, per stream):
//! its peak is the device's, taken at the instant of each page allocation,
//! so a page allocated and another released within one reservation (the
//! arena growing its page size) is seen.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::environment::backtrace::BackTrace;
use super::server::memory_management::relocation::{CopyQueue, StorageCopy};
use super::server::server::{IoError, ServerError};
use super::server::storage::{ComputeStorage, StorageHandle, StorageId, StorageUtilization};

/// Device-wide byte and call counters, shared by every stream's storage.
#[derive(Debug, Default)]
pub struct Ledger {
    allocated: AtomicU64,
    peak: AtomicU64,
    allocs: AtomicU64,
    frees: AtomicU64,
}

impl Ledger {
    /// Bytes held from the device now.
    pub fn allocated(&self) -> u64 {
        self.allocated.load(Ordering::Relaxed)
    }

    /// The most bytes ever held at once.
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    /// Page allocations made.
    pub fn allocs(&self) -> u64 {
        self.allocs.load(Ordering::Relaxed)
    }

    /// Page frees made.
    pub fn frees(&self) -> u64 {
        self.frees.load(Ordering::Relaxed)
    }
}

/// One stream's storage: ids and byte counts, no memory.
#[derive(Debug)]
pub struct NullStorage {
    ledger: Arc<Ledger>,
    capacity: u64,
    alignment: usize,
    sizes: HashMap<StorageId, u64>,
    allocated: u64,
}

impl NullStorage {
    /// A storage on a device of `capacity` bytes whose counters are `ledger`.
    pub fn new(ledger: Arc<Ledger>, capacity: u64, alignment: usize) -> Self {
        NullStorage {
            ledger,
            capacity,
            alignment,
            sizes: HashMap::new(),
            allocated: 0,
        }
    }
}

impl ComputeStorage for NullStorage {
    /// Nothing to read or write: the replay never touches bytes.
    type Resource = ();

    fn alignment(&self) -> usize {
        self.alignment
    }

    fn get(&mut self, handle: &StorageHandle) -> Result<(), IoError> {
        if self.sizes.contains_key(&handle.id) {
            Ok(())
        } else {
            Err(IoError::StorageHandleNotFound {
                reason: format!("{} in the null storage", handle.id).into(),
                backtrace: BackTrace::capture(),
            })
        }
    }

    /// Refuses past the device's capacity, counted over every stream, as
    /// the driver would (`OutOfMemory`, which CubeCL retries after a
    /// reclaim).
    fn alloc(&mut self, size: u64) -> Result<StorageHandle, IoError> {
        let held = self.ledger.allocated();
        if held.saturating_add(size) > self.capacity {
            return Err(IoError::OutOfMemory {
                size,
                backtrace: BackTrace::capture(),
            });
        }
        let id = StorageId::new();
        self.sizes.insert(id, size);
        self.allocated += size;
        let now = self.ledger.allocated.fetch_add(size, Ordering::Relaxed) + size;
        self.ledger.peak.fetch_max(now, Ordering::Relaxed);
        self.ledger.allocs.fetch_add(1, Ordering::Relaxed);
        Ok(StorageHandle {
            id,
            utilization: StorageUtilization { offset: 0, size },
        })
    }

    fn dealloc(&mut self, id: StorageId) {
        if let Some(size) = self.sizes.remove(&id) {
            self.allocated -= size;
            self.ledger.allocated.fetch_sub(size, Ordering::Relaxed);
            self.ledger.frees.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Frees already happened in `dealloc`.
    fn flush(&mut self) {}

    fn bytes_allocated(&self) -> u64 {
        self.allocated
    }
}

/// The copies of a relocation, on a device with no bytes: every copy
/// "lands" at once, so the engine plans and commits its moves exactly as
/// it would after real copies.
#[derive(Debug, Default)]
pub struct NoCopies;

impl CopyQueue<NullStorage> for NoCopies {
    fn wait_device(&mut self) -> Result<(), ServerError> {
        Ok(())
    }

    fn copy(&mut self, _storage: &mut NullStorage, _copy: &StorageCopy) -> Result<(), IoError> {
        Ok(())
    }

    fn wait_copies(&mut self) -> Result<(), ServerError> {
        Ok(())
    }
}
