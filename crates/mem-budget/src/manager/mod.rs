//! `GpuMemoryManager`: a device byte budget with an exact ledger.
//!
//! A manager charges every allocation it makes to a local [`MemoryBudget`]
//! before the device sees the request, and uncharges it when the allocation
//! drops. With a [`DeviceRuntime`] attached, allocations go through the
//! runtime's resource stack, so the device-wide [`GlobalDeviceBudget`]
//! applies as well; without one they come straight from the device's
//! resource (the legacy path). Allocation paths live in `allocate.rs`.
//!
//! [`GlobalDeviceBudget`]: crate::GlobalDeviceBudget

use std::fmt;
use std::sync::Arc;

use crate::account::Account;
use crate::budget::MemoryBudget;
use crate::device::BudgetDevice;
use crate::error::{BudgetError, Result};
use crate::runtime::DeviceRuntime;

mod allocate;
pub(crate) mod element;
pub(crate) mod reservation;
pub(crate) mod tracked;

/// GPU memory manager with budget enforcement.
///
/// Tracks allocated device memory and enforces a memory budget: a request
/// that would exceed it is refused with [`BudgetError::ResourceExhausted`]
/// and nothing is allocated.
pub struct GpuMemoryManager {
    pub(crate) device: BudgetDevice,
    pub(crate) budget: MemoryBudget,
    pub(crate) account: Arc<Account>,
    pub(crate) runtime: Option<Arc<DeviceRuntime>>,
}

impl fmt::Debug for GpuMemoryManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuMemoryManager")
            .field("device", &self.device)
            .field("limit", &self.budget_limit_bytes())
            .field("allocated", &self.allocated_bytes())
            .field("peak", &self.peak_bytes())
            .field("runtime", &self.runtime)
            .finish()
    }
}

impl GpuMemoryManager {
    /// A manager on `device` enforcing `budget`, allocating straight from the
    /// device's resource (no runtime attached).
    pub fn new(device: BudgetDevice, budget: MemoryBudget) -> Self {
        Self {
            device,
            account: Arc::new(Account::new(budget.device_bytes)),
            budget,
            runtime: None,
        }
    }

    /// Like [`GpuMemoryManager::new`], with every allocation routed through
    /// `runtime`'s resource stack: both this budget and the runtime's device
    /// budget apply.
    ///
    /// # Errors
    /// [`BudgetError::DeviceMismatch`] when `runtime` drives another device.
    pub fn with_runtime(
        device: BudgetDevice,
        budget: MemoryBudget,
        runtime: Arc<DeviceRuntime>,
    ) -> Result<Self> {
        check_same_device(&device, &runtime)?;
        let mut manager = Self::new(device, budget);
        manager.runtime = Some(runtime);
        Ok(manager)
    }

    /// An allocation view over `runtime` that shares this manager's device,
    /// budget and exact ledger.
    ///
    /// The overlay is not an independent budget: parent and overlay claim on
    /// one atomic ledger, so together they can never oversubscribe the limit,
    /// even racing. Its counters are the parent's too: `allocated_bytes`,
    /// `peak_bytes`, `alloc_count` and the failure counters read the same
    /// numbers through either. The runtime is validated before the ledger is shared, so
    /// a refused overlay leaves the parent untouched.
    ///
    /// # Errors
    /// [`BudgetError::DeviceMismatch`] when `runtime` drives another device.
    pub fn with_runtime_overlay(
        self: &Arc<Self>,
        runtime: Arc<DeviceRuntime>,
    ) -> Result<Arc<Self>> {
        check_same_device(&self.device, &runtime)?;
        Ok(Arc::new(Self {
            device: self.device.clone(),
            budget: self.budget,
            account: Arc::clone(&self.account),
            runtime: Some(runtime),
        }))
    }

    /// The attached runtime; `None` for a manager built with [`GpuMemoryManager::new`].
    pub fn runtime(&self) -> Option<&Arc<DeviceRuntime>> {
        self.runtime.as_ref()
    }

    /// Complete the stream-ordered frees pending in the attached runtime, so
    /// a later operation sees the restored budget. A no-op without a runtime.
    ///
    /// # Errors
    /// [`BudgetError::Kernel`] when a free fails; it stays pending and charged.
    pub fn reap_pending_deallocations(&self) -> Result<()> {
        match &self.runtime {
            Some(runtime) => runtime
                .reap_pending_deallocations()
                .map_err(|e| BudgetError::kernel("reap_pending_deallocations", e)),
            None => Ok(()),
        }
    }

    /// Whether `bytes` more would fit now in this budget and, with a runtime,
    /// in the device budget (a snapshot; only a claim is exact).
    ///
    /// # Errors
    /// [`BudgetError::ResourceExhausted`] naming the budget that would refuse.
    pub fn check_budget(&self, bytes: u64) -> Result<()> {
        self.account
            .ledger
            .would_fit(bytes)
            .map_err(|r| BudgetError::exhausted(r, crate::BudgetScope::Local))?;
        if let Some(global) = self.runtime.as_ref().and_then(|r| r.global_budget()) {
            let charged = global.charged();
            if charged
                .checked_add(bytes)
                .is_none_or(|total| total > global.limit())
            {
                return Err(BudgetError::ResourceExhausted {
                    requested: bytes,
                    allocated: charged,
                    limit: global.limit(),
                    remaining: global.limit().saturating_sub(charged),
                    which: crate::BudgetScope::Global,
                });
            }
        }
        Ok(())
    }

    /// Bytes charged now: live allocations, reservations, and frees that failed.
    pub fn allocated_bytes(&self) -> u64 {
        self.account.ledger.claimed()
    }

    /// Number of failed frees (each failed attempt, retries included).
    /// Their bytes stay charged because release was not proven.
    pub fn deallocation_failure_count(&self) -> u64 {
        self.account.free_failures()
    }

    /// Bytes still charged because their free failed (a retry that succeeds
    /// at a later reap gives them back).
    pub fn deallocation_failure_bytes(&self) -> u64 {
        self.account.free_failure_bytes()
    }

    /// Highest charged total since construction or the last [`GpuMemoryManager::reset_peak`].
    pub fn peak_bytes(&self) -> u64 {
        self.account.ledger.peak()
    }

    /// Lower the peak to the charged level now (not zero), so a measurement
    /// window starts from the live state.
    pub fn reset_peak(&self) {
        self.account.ledger.reset_peak();
    }

    /// Number of device allocation requests issued (by `alloc` and
    /// `alloc_raw`; reservations issue none). Snapshot it around a measured
    /// region to prove the region made no device allocation.
    pub fn alloc_count(&self) -> u64 {
        self.account.alloc_count()
    }

    /// Reset the allocation-request counter to zero.
    pub fn reset_alloc_count(&self) {
        self.account.reset_alloc_count();
    }

    /// The budget.
    pub fn budget(&self) -> &MemoryBudget {
        &self.budget
    }

    /// The limit enforced jointly by this manager and its overlays.
    pub fn budget_limit_bytes(&self) -> u64 {
        self.account.ledger.limit()
    }

    /// Bytes that can still be charged to this budget.
    pub fn remaining_bytes(&self) -> u64 {
        self.account.ledger.remaining()
    }

    /// The device.
    pub fn device(&self) -> &BudgetDevice {
        &self.device
    }

    /// Validate a caller-requested manual release of `bytes`.
    ///
    /// Tracked allocations release themselves when dropped; a caller cannot
    /// prove it owns the bytes it names, so no manual release ever changes
    /// the ledger: zero is accepted, more than is charged is
    /// [`BudgetError::Underflow`], anything else while bytes are live is
    /// [`BudgetError::LiveAllocations`]. No counter changes in any case.
    pub fn record_free(&self, bytes: u64) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let allocated = self.allocated_bytes();
        if bytes > allocated {
            return Err(BudgetError::Underflow {
                requested: bytes,
                allocated,
            });
        }
        Err(BudgetError::LiveAllocations {
            operation: "record_free",
            live_bytes: allocated,
        })
    }

    /// Zero the peak, the allocation count and the failure counters — only
    /// when nothing is charged.
    ///
    /// # Errors
    /// [`BudgetError::LiveAllocations`] while any byte is charged.
    pub fn reset_tracking(&self) -> Result<()> {
        self.account.reset_tracking()
    }
}

fn check_same_device(device: &BudgetDevice, runtime: &DeviceRuntime) -> Result<()> {
    if device.same_device(runtime.device()) {
        return Ok(());
    }
    Err(BudgetError::DeviceMismatch {
        manager_device: device.name(),
        runtime_device: runtime.device().name(),
    })
}
