//! `TestDevice`: the resource stack every program and scenario runs on.
//!
//! Bottom to top: real host memory ([`HostResource`], so contents are
//! checkable), [`TrackingResource`] (what is outstanding — the leak check),
//! [`FaultInjection`] (fail the k-th call), then one [`GlobalDeviceBudget`](mem_budget::GlobalDeviceBudget)
//! shared by everything: the pool managers' storages and both budget
//! runtimes. Why this order: an injected failure never reaches the tracker,
//! so "outstanding" is exactly what the host really holds, and the global
//! ledger sits above the fault so its rollback paths are exercised.
//!
//! An arena device ([`TestDevice::with_virtual_memory`]) adds the same
//! stack for virtual memory, shared by every storage: [`HostVirtualMemory`]
//! (real bytes), [`TrackingResource`] (which ranges and chunks exist, and
//! where each chunk is mapped), [`FaultInjection`] counting only the
//! lifecycle calls (reserve and free a range, create and release a chunk,
//! map, unmap), and the global budget charging every chunk
//! ([`mem_budget::BudgetedVirtualMemory`]). On such a device the sweep's
//! `k` counts and fails virtual-memory calls. Between the fault layer and
//! the budget sits [`CheckedVm`], the reclamation oracle: every unmap that
//! happens is checked against the device's [`UseLog`] (the lazy streams'
//! recorded uses).

use std::sync::Arc;

use crate::streams::{CheckedVm, UseLog};
use mem_budget::{BudgetDevice, DeviceRuntime, GlobalBudgetHandle, GpuMemoryManager, MemoryBudget};

use mem_storage::{
    DeviceResource, FaultInjection, FaultPlan, HostResource, HostVirtualMemory, Operation,
    ResourceStorage, StreamId, TrackingResource, VirtualMemory, VirtualMemoryStats,
};

/// The tracked host memory at the bottom of the stack.
pub type Tracked = TrackingResource<HostResource>;
/// The fault-injecting layer above the tracker.
pub type Faulty = FaultInjection<Arc<Tracked>>;
/// The storage each pool manager uses: pages through the whole stack.
pub type PoolStorage = ResourceStorage<Arc<dyn DeviceResource>>;
/// The tracked host virtual memory at the bottom of an arena device's VM stack.
pub type TrackedVm = TrackingResource<HostVirtualMemory>;
/// The fault-injecting layer above it (lifecycle calls only).
pub type FaultyVm = FaultInjection<Arc<TrackedVm>>;

/// The virtual-memory lifecycle calls an arena device counts and fails.
pub const VM_CALLS: [Operation; 6] = [
    Operation::ReserveRange,
    Operation::FreeRange,
    Operation::CreateChunk,
    Operation::ReleaseChunk,
    Operation::Map,
    Operation::Unmap,
];

/// An arena device's virtual-memory stack.
#[derive(Debug)]
struct VmStack {
    tracking: Arc<TrackedVm>,
    faults: Arc<FaultyVm>,
    /// The streams' cursors and recorded uses the oracle checks unmaps against.
    log: UseLog,
    /// What storages get: the fault layer under the global budget.
    charged: Arc<dyn VirtualMemory>,
}

/// One host "device" with tracking, fault injection and a global budget.
#[derive(Debug)]
pub struct TestDevice {
    tracking: Arc<Tracked>,
    faults: Arc<Faulty>,
    device: BudgetDevice,
    stack: Arc<dyn DeviceResource>,
    global: GlobalBudgetHandle,
    vm: Option<VmStack>,
}

impl TestDevice {
    /// A host device of `capacity` bytes under a global budget of `global_limit`.
    pub fn new(capacity: u64, global_limit: u64) -> Self {
        Self::build(capacity, global_limit, None)
    }

    /// A host device as [`TestDevice::new`] that also has `vm_capacity`
    /// bytes of host virtual memory in chunks of `granularity` bytes (a
    /// multiple of the OS page size), shared by every storage, its chunks
    /// charged to the global budget; faults are injected into its
    /// lifecycle calls ([`VM_CALLS`]) instead of the resource's.
    ///
    /// # Panics
    /// When the host cannot make a virtual memory of that granularity.
    pub fn with_virtual_memory(
        capacity: u64,
        global_limit: u64,
        vm_capacity: u64,
        granularity: u64,
    ) -> Self {
        Self::build(capacity, global_limit, Some((vm_capacity, granularity)))
    }

    fn build(capacity: u64, global_limit: u64, vm: Option<(u64, u64)>) -> Self {
        let tracking = Arc::new(TrackingResource::new(HostResource::with_capacity(capacity)));
        let faults = Arc::new(FaultInjection::new(Arc::clone(&tracking)));
        let device =
            BudgetDevice::from_resource("host", 0, Arc::clone(&faults) as Arc<dyn DeviceResource>);
        // mem-budget's one stack builder: the global budget over the faults.
        let built = DeviceRuntime::builder(device.clone())
            .global_budget(MemoryBudget::bytes(global_limit))
            .build_stack();
        let budget = built
            .budget
            .expect("a stack built with a global budget has one");
        let global = budget.handle();
        let vm = vm.map(|(vm_capacity, granularity)| {
            let host = HostVirtualMemory::with_granularity(vm_capacity, granularity)
                .expect("host virtual memory of this granularity");
            let tracking = Arc::new(TrackingResource::new(host));
            let faults = Arc::new(FaultInjection::new(Arc::clone(&tracking)).counting(&VM_CALLS));
            let log = UseLog::new();
            let checked = CheckedVm::new(Arc::clone(&faults), log.clone());
            let charged: Arc<dyn VirtualMemory> =
                Arc::new(budget.charge_virtual_memory(Arc::new(checked) as Arc<dyn VirtualMemory>));
            VmStack {
                tracking,
                faults,
                log,
                charged,
            }
        });
        Self {
            tracking,
            faults,
            device,
            stack: built.top,
            global,
            vm,
        }
    }

    /// Pool storage on `stream`, charged to the global budget (with the
    /// device's virtual memory, on an arena device).
    pub fn storage(&self, stream: u64) -> PoolStorage {
        let storage = ResourceStorage::on_stream(Arc::clone(&self.stack), StreamId(stream));
        match &self.vm {
            Some(vm) => storage.with_virtual_memory(Arc::clone(&vm.charged)),
            None => storage,
        }
    }

    /// Whether this device has virtual memory (an arena device).
    pub fn has_virtual_memory(&self) -> bool {
        self.vm.is_some()
    }

    /// What the host virtual memory holds: its own counters (every range,
    /// chunk and mapping of every storage). Zero without virtual memory.
    pub fn vm_stats(&self) -> VirtualMemoryStats {
        self.vm
            .as_ref()
            .map_or_else(VirtualMemoryStats::default, |vm| vm.tracking.vm_stats())
    }

    /// The tracked virtual memory (ranges and chunks outstanding), if any.
    pub fn vm_tracking(&self) -> Option<&TrackedVm> {
        self.vm.as_ref().map(|vm| &*vm.tracking)
    }

    /// The lazy streams' cursors and recorded uses that every unmap of
    /// this device's virtual memory is checked against, if it has one.
    pub fn use_log(&self) -> Option<&UseLog> {
        self.vm.as_ref().map(|vm| &vm.log)
    }

    /// The virtual memory's fault injector, if any.
    pub fn vm_faults(&self) -> Option<&FaultyVm> {
        self.vm.as_ref().map(|vm| &*vm.faults)
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

    /// Set the plan of the injector the sweep drives: the virtual
    /// memory's on an arena device, else the resource's.
    fn plan(&self, plan: FaultPlan) {
        match &self.vm {
            Some(vm) => vm.faults.set_plan(plan),
            None => self.faults.set_plan(plan),
        }
    }

    /// Fail only the `k`-th counted call from now on (1-based, counting
    /// from the last [`TestDevice::reset_count`]): a virtual-memory
    /// lifecycle call on an arena device, else a resource call.
    pub fn arm(&self, k: u64) {
        self.plan(FaultPlan::Nth(k));
    }

    /// Fail the `k`-th counted call and every later one (a device that went away).
    pub fn arm_from(&self, k: u64) {
        self.plan(FaultPlan::FromNth(k));
    }

    /// Fail the very next counted call.
    pub fn arm_next(&self) {
        self.plan(FaultPlan::Nth(self.calls() + 1));
    }

    /// Fail nothing (either injector).
    pub fn disarm(&self) {
        self.faults.disarm();
        if let Some(vm) = &self.vm {
            vm.faults.disarm();
        }
    }

    /// Counted calls so far (of the injector the sweep drives).
    pub fn calls(&self) -> u64 {
        match &self.vm {
            Some(vm) => vm.faults.calls(),
            None => self.faults.calls(),
        }
    }

    /// Faults injected so far (both injectors).
    pub fn injected(&self) -> u64 {
        self.faults.injected() + self.vm.as_ref().map_or(0, |vm| vm.faults.injected())
    }

    /// Restart the call count at zero (both injectors).
    pub fn reset_count(&self) {
        self.faults.reset_count();
        if let Some(vm) = &self.vm {
            vm.faults.reset_count();
        }
    }
}
