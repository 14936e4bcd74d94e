//! `TestDevice`: the resource stack every program and scenario runs on.
//!
//! Bottom to top: real host memory ([`HostResource`], so contents are
//! checkable), [`TrackingResource`] (what is outstanding — the leak check),
//! [`FaultInjection`] (fail the k-th call), then one [`GlobalDeviceBudget`]
//! shared by everything: the pool managers' storages and both budget
//! runtimes. Why this order: an injected failure never reaches the tracker,
//! so "outstanding" is exactly what the host really holds, and the global
//! ledger sits above the fault so its rollback paths are exercised.

use std::sync::Arc;

use mem_budget::{
    BudgetDevice, DeviceRuntime, GlobalBudgetHandle, GlobalDeviceBudget, GpuMemoryManager,
    MemoryBudget,
};
use mem_storage::{
    DeviceResource, FaultInjection, FaultPlan, HostResource, ResourceStorage, StreamId,
    TrackingResource,
};

/// The tracked host memory at the bottom of the stack.
pub type Tracked = TrackingResource<HostResource>;
/// The fault-injecting layer above the tracker.
pub type Faulty = FaultInjection<Arc<Tracked>>;
/// The storage each pool manager uses: pages through the whole stack.
pub type PoolStorage = ResourceStorage<Arc<dyn DeviceResource>>;

/// One host "device" with tracking, fault injection and a global budget.
#[derive(Debug)]
pub struct TestDevice {
    tracking: Arc<Tracked>,
    faults: Arc<Faulty>,
    device: BudgetDevice,
    stack: Arc<dyn DeviceResource>,
    global: GlobalBudgetHandle,
}

impl TestDevice {
    /// A host device of `capacity` bytes under a global budget of `global_limit`.
    pub fn new(capacity: u64, global_limit: u64) -> Self {
        let tracking = Arc::new(TrackingResource::new(HostResource::with_capacity(capacity)));
        let faults = Arc::new(FaultInjection::new(Arc::clone(&tracking)));
        let device =
            BudgetDevice::from_resource("host", 0, Arc::clone(&faults) as Arc<dyn DeviceResource>);
        let budget = GlobalDeviceBudget::new(
            Arc::clone(device.resource()),
            MemoryBudget::bytes(global_limit),
        );
        let global = budget.handle();
        Self {
            tracking,
            faults,
            device,
            stack: Arc::new(budget),
            global,
        }
    }

    /// Pool storage on `stream`, charged to the global budget.
    pub fn storage(&self, stream: u64) -> PoolStorage {
        ResourceStorage::on_stream(Arc::clone(&self.stack), StreamId(stream))
    }

    /// A runtime over the shared stack on `stream` (frees immediately; a
    /// failed free waits for a reap).
    pub fn runtime(&self, stream: u64) -> Arc<DeviceRuntime> {
        Arc::new(DeviceRuntime::from_stack(
            self.device.clone(),
            Arc::clone(&self.stack),
            Some(self.global.clone()),
            StreamId(stream),
            false,
        ))
    }

    /// A budget manager of `limit` bytes on runtime `stream`, and an overlay
    /// of it on runtime `overlay_stream` (one shared local ledger).
    pub fn budget_pair(
        &self,
        limit: u64,
        stream: u64,
        overlay_stream: u64,
    ) -> (Arc<GpuMemoryManager>, Arc<GpuMemoryManager>) {
        let parent = GpuMemoryManager::with_runtime(
            self.device.clone(),
            MemoryBudget::bytes(limit),
            self.runtime(stream),
        )
        .map(Arc::new)
        .expect("a runtime built from this device's clone drives this device");
        let overlay = parent
            .with_runtime_overlay(self.runtime(overlay_stream))
            .expect("a runtime built from this device's clone drives this device");
        (parent, overlay)
    }

    /// What the host really holds.
    pub fn tracking(&self) -> &Tracked {
        &self.tracking
    }

    /// The fault injector (arm, disarm, count).
    pub fn faults(&self) -> &Faulty {
        &self.faults
    }

    /// The global budget's ledger.
    pub fn global(&self) -> &GlobalBudgetHandle {
        &self.global
    }

    /// Fail only the `k`-th counted call from now on (1-based, counting
    /// from the last [`TestDevice::reset_count`]).
    pub fn arm(&self, k: u64) {
        self.faults.set_plan(FaultPlan::Nth(k));
    }

    /// Fail the `k`-th counted call and every later one (a device that went away).
    pub fn arm_from(&self, k: u64) {
        self.faults.set_plan(FaultPlan::FromNth(k));
    }

    /// Fail the very next counted call.
    pub fn arm_next(&self) {
        self.faults
            .set_plan(FaultPlan::Nth(self.faults.calls() + 1));
    }

    /// Fail nothing.
    pub fn disarm(&self) {
        self.faults.disarm();
    }

    /// Counted calls so far.
    pub fn calls(&self) -> u64 {
        self.faults.calls()
    }

    /// Faults injected so far.
    pub fn injected(&self) -> u64 {
        self.faults.injected()
    }

    /// Restart the call count at zero.
    pub fn reset_count(&self) {
        self.faults.reset_count();
    }
}
