//! Which device backs a [`Device`](crate::Device), and the resource stack
//! built over it.
//!
//! The stack is the same for every backend: the backend resource at the
//! bottom, mem-budget's [`GlobalDeviceBudget`] above it (built by
//! mem-budget's one stack builder, `DeviceRuntimeBuilder::build_stack`), and
//! one [`ResourceStorage`] per stream above that. So every page any stream's
//! pools allocate is charged against the one device budget, and a refusal
//! by the budget says so by type (`refused_by: Refuser::DeviceBudget`),
//! distinct from the device's own (`Refuser::Device`).
//!
//! On the host and simulated backends the arena pools' virtual memory is
//! made from the resource ([`Backend::virtual_memory`] takes its
//! [`PhysicalMemory`]), so pages and chunks share the device's one physical
//! capacity, as `cuMemAlloc` and `cuMemCreate` share a GPU's: without that,
//! each would be capped at the device size on its own and a 16 GiB device
//! could hold 32 GiB. The budget, when finite, caps both again on its ledger.

use std::sync::Arc;

use mem_budget::{BudgetDevice, DeviceRuntime, GlobalDeviceBudget, MemoryBudget};
use mem_pools::MemoryManagement;
use mem_storage::{
    CudaResource, CudaVirtualMemory, DEFAULT_GRANULARITY, DeviceResource, HostResource,
    HostVirtualMemory, PhysicalMemory, ResourceStorage, SimulatedResource, SimulatedVirtualMemory,
    StreamId, VirtualMemory,
};

use crate::config::Budget;
use crate::error::{GpuMemError, Result};

/// The budget adaptor over the device's backend resource.
pub type BudgetedResource = GlobalDeviceBudget<Arc<dyn DeviceResource>>;

/// The storage under every stream's pools: pages charged to the device budget.
pub type DeviceStorage = ResourceStorage<Arc<BudgetedResource>>;

/// One stream's pool engine.
pub type StreamMemory = MemoryManagement<DeviceStorage>;

/// A backend's resource, opened, with the physical memory its pages draw
/// on where the backend models it (host and simulated; CUDA's driver keeps
/// its own, shared by `cuMemAlloc` and `cuMemCreate`).
pub(crate) struct Opened {
    pub(crate) resource: Arc<dyn DeviceResource>,
    physical: Option<Arc<PhysicalMemory>>,
}

/// A backend's virtual memory for arena pools, and on CUDA the same
/// memory by its own type (for what only CUDA has: peer access).
pub(crate) type BackendVm = (Arc<dyn VirtualMemory>, Option<Arc<CudaVirtualMemory>>);

/// The backend a device is built on.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// Real host memory, optionally capped.
    Host { capacity: Option<u64> },
    /// A simulated device of this many bytes (addresses, no memory).
    Simulated { capacity: u64 },
    /// A CUDA device, already opened.
    Cuda {
        ordinal: usize,
        resource: Arc<CudaResource>,
        /// The runtime's own streams, stream 0 first (empty: stream 0 is
        /// the default stream and the others are created).
        streams: Vec<Arc<cudarc::driver::CudaStream>>,
    },
}

impl Backend {
    /// Open CUDA device `ordinal`, checking first that the driver loads
    /// (a missing libcuda panics on the first driver call otherwise).
    pub(crate) fn cuda(ordinal: usize) -> Result<Self> {
        if !mem_storage::cuda_available() {
            return Err(GpuMemError::CudaUnavailable {
                ordinal,
                reason: "the CUDA driver library (libcuda) cannot be loaded on this machine".into(),
            });
        }
        let resource = CudaResource::new(ordinal).map_err(|e| GpuMemError::CudaUnavailable {
            ordinal,
            reason: e.to_string(),
        })?;
        Ok(Backend::Cuda {
            ordinal,
            resource: Arc::new(resource),
            streams: Vec::new(),
        })
    }

    /// A runtime's own CUDA context (checked for the driver first, as
    /// `cuda`).
    pub(crate) fn cuda_context(ctx: Arc<cudarc::driver::CudaContext>) -> Result<Self> {
        let ordinal = ctx.ordinal();
        let mode = if ctx.has_async_alloc() {
            mem_storage::CudaAllocMode::StreamOrdered
        } else {
            mem_storage::CudaAllocMode::Sync
        };
        let resource =
            CudaResource::from_context(ctx, mode).map_err(|e| GpuMemError::CudaUnavailable {
                ordinal,
                reason: e.to_string(),
            })?;
        Ok(Backend::Cuda {
            ordinal,
            resource: Arc::new(resource),
            streams: Vec::new(),
        })
    }

    /// The driver calls a page allocation is: on CUDA, what the resource's
    /// mode makes (`cuMemAlloc` / `cuMemFree` on a device without memory
    /// pools), else the stream-ordered pair the simulated backends model.
    pub(crate) fn page_calls(&self) -> mem_storage::PageCalls {
        match self {
            Backend::Cuda { resource, .. }
                if resource.mode() == mem_storage::CudaAllocMode::Sync =>
            {
                mem_storage::PageCalls::Sync
            }
            _ => mem_storage::PageCalls::StreamOrdered,
        }
    }

    /// `"<kind>:<ordinal>"`.
    pub(crate) fn name(&self) -> String {
        match self {
            Backend::Host { .. } => "host:0".into(),
            Backend::Simulated { .. } => "sim:0".into(),
            Backend::Cuda { ordinal, .. } => format!("cuda:{ordinal}"),
        }
    }

    /// The bottom of the resource stack, and the physical memory its
    /// virtual memory must share.
    pub(crate) fn open(&self) -> Opened {
        let (resource, physical): (Arc<dyn DeviceResource>, _) = match self {
            Backend::Host { capacity } => {
                let host = capacity.map_or_else(HostResource::new, HostResource::with_capacity);
                let physical = host.physical_memory().clone();
                (Arc::new(host), Some(physical))
            }
            Backend::Simulated { capacity } => {
                let sim = SimulatedResource::new(*capacity);
                let physical = sim.physical_memory().clone();
                (Arc::new(sim), Some(physical))
            }
            Backend::Cuda { resource, .. } => (resource.clone(), None),
        };
        Opened { resource, physical }
    }

    /// The backend's virtual memory for arena pools, its chunks drawing on
    /// the same physical memory as `opened`'s pages, or why there is none.
    pub(crate) fn virtual_memory(&self, opened: &Opened) -> std::result::Result<BackendVm, String> {
        let shared = || {
            opened
                .physical
                .clone()
                .ok_or_else(|| format!("{} opened without its physical memory", self.name()))
        };
        match self {
            Backend::Host { .. } => HostVirtualMemory::sharing(shared()?, DEFAULT_GRANULARITY)
                .map(|vm| (Arc::new(vm) as Arc<dyn VirtualMemory>, None))
                .map_err(|e| format!("host virtual memory is unavailable: {e}")),
            Backend::Simulated { .. } => {
                SimulatedVirtualMemory::sharing(shared()?, DEFAULT_GRANULARITY)
                    .map(|vm| (Arc::new(vm) as Arc<dyn VirtualMemory>, None))
                    .map_err(|e| format!("simulated virtual memory is unavailable: {e}"))
            }
            Backend::Cuda { resource, .. } => {
                CudaVirtualMemory::from_context(resource.context().clone())
                    .map(|vm| {
                        // At teardown it waits for this device's streams only.
                        vm.wait_at_teardown_for_streams_of(resource.clone());
                        let vm = Arc::new(vm);
                        (vm.clone() as Arc<dyn VirtualMemory>, Some(vm))
                    })
                    .map_err(|e| format!("CUDA virtual memory management is unavailable: {e}"))
            }
        }
    }

    /// The id of stream `index`: on CUDA the runtime's own stream `index`
    /// when it gave its streams, else stream 0 is the default stream and a
    /// non-blocking stream is created for each other one.
    pub(crate) fn stream_id(&self, index: usize) -> Result<StreamId> {
        match self {
            Backend::Cuda {
                resource, streams, ..
            } => match streams.get(index) {
                Some(stream) => Ok(resource.register_stream(stream.clone())?),
                None if index > 0 => Ok(resource.create_stream()?),
                None => Ok(StreamId::DEFAULT),
            },
            _ => Ok(StreamId(index as u64)),
        }
    }

    /// The CUDA resource, on a CUDA backend.
    pub(crate) fn cuda_resource(&self) -> Option<Arc<CudaResource>> {
        match self {
            Backend::Cuda { resource, .. } => Some(resource.clone()),
            _ => None,
        }
    }
}

/// Resolve a budget against the device under it and build the stack over
/// `backend`'s opened `resource` with mem-budget's one stack builder (here
/// the budget right over the backend: no middle layer, no logging).
pub(crate) fn budgeted(
    backend: &Backend,
    resource: Arc<dyn DeviceResource>,
    budget: Budget,
) -> Result<Arc<BudgetedResource>> {
    budget.validate()?;
    let budget = match budget {
        Budget::Unlimited => MemoryBudget::unlimited(),
        Budget::Bytes(bytes) => MemoryBudget::bytes(bytes),
        Budget::Fraction(f) => MemoryBudget::fraction_of(&*resource, f)?,
    };
    let (kind, ordinal) = match backend {
        Backend::Host { .. } => ("host", 0),
        Backend::Simulated { .. } => ("sim", 0),
        Backend::Cuda { ordinal, .. } => ("cuda", *ordinal),
    };
    let device = BudgetDevice::from_resource(kind, ordinal, resource);
    let stack = DeviceRuntime::builder(device)
        .global_budget(budget)
        .build_stack();
    Ok(stack
        .budget
        .expect("a stack built with a global budget has one"))
}
