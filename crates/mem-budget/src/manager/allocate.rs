//! The manager's claiming paths: reservations, typed and raw allocations.
//!
//! Order of claims, everywhere: the device budget (if any) is claimed before
//! the local one for reservations, and by the stack after the local one for
//! allocations; a refusal at any step rolls back every claim already made,
//! so a failed call leaves every counter as it found it (except
//! `alloc_count`, which counts requests issued to the device).

use std::sync::Arc;

use mem_storage::{Refuser, StorageError, StreamId};

use crate::error::{BudgetError, BudgetScope, Result};
use crate::global_handle::GlobalBudgetHandle;
use crate::manager::GpuMemoryManager;
use crate::manager::element::{AllocTag, DeviceElement};
use crate::manager::reservation::GpuMemoryReservation;
use crate::manager::tracked::{Allocation, Route, RuntimeAllocBlock, TrackedSlice};

impl GpuMemoryManager {
    /// Atomically reserve `bytes` for one bounded multi-allocation request.
    ///
    /// The token owns the whole local claim. A runtime-backed manager first
    /// reserves the same bytes on the runtime's finite device budget; a
    /// runtime without one is refused. No device allocation is made and
    /// [`GpuMemoryManager::alloc_count`] does not change.
    ///
    /// # Errors
    /// [`BudgetError::NoGlobalBudget`] for a runtime with no finite device
    /// budget; [`BudgetError::ResourceExhausted`] naming the budget that refused.
    pub fn reserve_bytes(self: &Arc<Self>, bytes: u64) -> Result<GpuMemoryReservation> {
        let global = match &self.runtime {
            None => None,
            Some(runtime) => match runtime.global_budget() {
                Some(handle) if handle.is_finite() => {
                    let (token, total) = handle.reserve_tentative(bytes)?;
                    Some((handle, token, total))
                }
                _ => return Err(BudgetError::NoGlobalBudget),
            },
        };
        // On refusal `global` drops here, releasing the device claim before
        // it was ever counted as a peak.
        self.account.claim(bytes)?;
        let global = global.map(|(handle, token, total)| {
            handle.confirm(total);
            token
        });
        Ok(GpuMemoryReservation::new(
            Arc::clone(&self.account),
            global,
            bytes,
        ))
    }

    /// Allocate `len` elements of `T`, charged to this budget until the
    /// returned slice drops.
    ///
    /// With a runtime the memory comes through its stack (the device budget
    /// applies too) and is freed through it; without one it comes straight
    /// from the device's resource.
    ///
    /// # Errors
    /// [`BudgetError::SizeOverflow`] when `len × size_of::<T>()` overflows;
    /// [`BudgetError::ResourceExhausted`] when a budget refuses;
    /// [`BudgetError::Kernel`] when the device fails.
    pub fn alloc<T: DeviceElement>(self: &Arc<Self>, len: usize) -> Result<TrackedSlice<T>> {
        let element_bytes = std::mem::size_of::<T>();
        let bytes = len
            .checked_mul(element_bytes)
            .and_then(|b| u64::try_from(b).ok())
            .ok_or(BudgetError::SizeOverflow { len, element_bytes })?;
        let alloc = self.allocate(bytes, "alloc")?;
        Ok(TrackedSlice::new(alloc, len))
    }

    /// Allocate `bytes` raw bytes through the attached runtime.
    ///
    /// Both budgets apply; on a refusal by the runtime the local claim is
    /// rolled back. There is no fallback to the device when no runtime is
    /// attached.
    ///
    /// # Errors
    /// [`BudgetError::Kernel`] with no runtime attached, or when the device
    /// fails; [`BudgetError::ResourceExhausted`] when either budget refuses.
    pub fn alloc_raw(self: &Arc<Self>, bytes: usize, tag: AllocTag) -> Result<RuntimeAllocBlock> {
        if self.runtime.is_none() {
            return Err(BudgetError::Kernel {
                operation: "alloc_raw",
                detail: "no device runtime is attached; build the manager with GpuMemoryManager::with_runtime"
                    .to_string(),
                source: None,
            });
        }
        let bytes = u64::try_from(bytes).map_err(|_| BudgetError::SizeOverflow {
            len: bytes,
            element_bytes: 1,
        })?;
        let alloc = self.allocate(bytes, "alloc_raw")?;
        tracing::debug!(
            ptr = alloc.ptr.0,
            bytes,
            tag = tag.name(),
            "raw runtime allocation"
        );
        Ok(RuntimeAllocBlock::new(alloc, tag))
    }

    /// Claim locally, then allocate along this manager's route; roll the
    /// claim back if the route refuses. The claim is tentative until the
    /// device succeeds, so a refused allocation never raises the peak.
    fn allocate(self: &Arc<Self>, bytes: u64, operation: &'static str) -> Result<Allocation> {
        let total = self.account.claim_tentative(bytes)?;
        self.account.count_alloc();
        let (result, route) = match &self.runtime {
            Some(runtime) => (runtime.allocate(bytes), Route::Runtime(Arc::clone(runtime))),
            None => {
                let resource = Arc::clone(self.device.resource());
                (
                    resource.allocate(bytes, StreamId::DEFAULT),
                    Route::Device(resource),
                )
            }
        };
        match result {
            Ok(ptr) => {
                self.account.confirm(total);
                Ok(Allocation {
                    ptr,
                    bytes,
                    route,
                    account: Arc::clone(&self.account),
                })
            }
            Err(error) => {
                self.account.release(bytes);
                let global = self.runtime.as_ref().and_then(|r| r.global_budget());
                Err(route_error(operation, error, global))
            }
        }
    }
}

/// A refusal by the device budget in the stack is a budget error with its
/// numbers; anything else the device said is a kernel error.
fn route_error(
    operation: &'static str,
    error: StorageError,
    global: Option<&GlobalBudgetHandle>,
) -> BudgetError {
    match error {
        StorageError::OutOfMemory {
            refused_by: Refuser::DeviceBudget,
            requested,
            free,
            total,
            ..
        } => BudgetError::ResourceExhausted {
            requested,
            allocated: total.saturating_sub(free),
            limit: total,
            remaining: free,
            which: BudgetScope::Global,
        },
        StorageError::TooBig {
            refused_by: Refuser::DeviceBudget,
            requested,
            max,
            ..
        } => BudgetError::ResourceExhausted {
            requested,
            allocated: global.map_or(0, GlobalBudgetHandle::charged),
            limit: max,
            remaining: global.map_or(0, GlobalBudgetHandle::remaining),
            which: BudgetScope::Global,
        },
        other => BudgetError::kernel(operation, other),
    }
}
