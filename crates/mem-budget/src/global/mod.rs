//! `GlobalDeviceBudget`: one hard cap shared by every user of a device.
//!
//! A [`DeviceResource`] adaptor (RMM's `limiting_resource_adaptor`, made
//! exact): every allocation first claims its bytes on an atomic [`Ledger`],
//! then asks the resource below. If the resource below fails, the claim is
//! rolled back, so a failed allocation costs nothing. If a free fails, the
//! bytes stay charged and the failure is counted: the memory was not proven
//! released, and charging it as free could let the device be oversubscribed.
//!
//! Because it is a resource, it stacks anywhere a resource goes — in
//! particular under [`ResourceStorage`](mem_storage::ResourceStorage), so the
//! pool engine's pages are charged against the same device budget as every
//! other user. Reservations ([`GlobalBudgetHandle::reserve`]) claim bytes
//! without allocating, for callers that must know a multi-allocation request
//! will fit before they start it.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use mem_storage::{DevicePtr, DeviceResource, MemInfo, StorageError, StreamId};

use crate::budget::MemoryBudget;
use crate::error::Result;
use crate::global_handle::{GlobalBudgetHandle, GlobalReservation, Shared};
use crate::ledger::Ledger;

mod virtual_memory;

pub use virtual_memory::BudgetedVirtualMemory;

use mem_storage::VirtualMemory;

/// A limiting resource adaptor: a hard, atomic byte cap over `R`.
#[derive(Debug)]
pub struct GlobalDeviceBudget<R: DeviceResource> {
    upstream: R,
    pub(crate) shared: Arc<Shared>,
}

impl<R: DeviceResource> GlobalDeviceBudget<R> {
    /// Cap `upstream` at `budget` bytes held at once.
    pub fn new(upstream: R, budget: MemoryBudget) -> Self {
        Self {
            upstream,
            shared: Arc::new(Shared {
                ledger: Ledger::new(budget.device_bytes),
                free_failures: AtomicU64::new(0),
                free_failure_bytes: AtomicU64::new(0),
            }),
        }
    }

    /// The resource below.
    pub fn upstream(&self) -> &R {
        &self.upstream
    }

    /// A cloneable handle on this budget's ledger: reservations and figures.
    pub fn handle(&self) -> GlobalBudgetHandle {
        GlobalBudgetHandle::new(Arc::clone(&self.shared))
    }

    /// Claim `bytes` without allocating; released when the reservation drops.
    pub fn reserve(&self, bytes: u64) -> Result<GlobalReservation> {
        self.handle().reserve(bytes)
    }

    /// The cap in bytes.
    pub fn limit(&self) -> u64 {
        self.shared.ledger.limit()
    }

    /// Bytes charged now (allocations, reservations, and failed frees).
    pub fn charged(&self) -> u64 {
        self.shared.ledger.claimed()
    }

    /// `vm`'s chunks, charged to this budget beside its pages.
    pub fn charge_virtual_memory(&self, vm: Arc<dyn VirtualMemory>) -> BudgetedVirtualMemory {
        BudgetedVirtualMemory {
            upstream: vm,
            shared: self.shared.clone(),
        }
    }
}

impl<R: DeviceResource> DeviceResource for GlobalDeviceBudget<R> {
    fn allocate(&self, bytes: u64, stream: StreamId) -> Result<DevicePtr, StorageError> {
        self.shared
            .charge(bytes, || self.upstream.allocate(bytes, stream))
    }

    fn deallocate(&self, ptr: DevicePtr, bytes: u64, stream: StreamId) -> Result<(), StorageError> {
        let freed = self.upstream.deallocate(ptr, bytes, stream);
        self.shared
            .refund(bytes, freed, || format!("pointer {:#x}", ptr.0))
    }

    fn mem_info(&self) -> Result<MemInfo, StorageError> {
        let below = self.upstream.mem_info()?;
        let ledger = &self.shared.ledger;
        Ok(MemInfo {
            free: below.free.min(ledger.remaining()),
            total: below.total.min(ledger.limit()),
        })
    }

    // Every call that does not charge the budget is forwarded, stream_wait
    // included: the trait default is a no-op, which would silently drop
    // cross-stream ordering on CUDA.
    mem_storage::forward_device_resource!(
        upstream: backend, alignment, holds_memory, write, read, fill, copy, synchronize,
        stream_wait
    );
}
