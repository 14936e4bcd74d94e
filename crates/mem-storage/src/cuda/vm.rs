//! `CudaVirtualMemory`: the driver's virtual memory management on one device.
//!
//! `cuMemAddressReserve` / `cuMemAddressFree` for ranges, `cuMemCreate` /
//! `cuMemRelease` for chunks (pinned device memory), `cuMemMap` followed by
//! `cuMemSetAccess` (read-write for this device and every peer granted
//! access, `vm_peers.rs`) for map, `cuMemUnmap` for
//! unmap. The granularity is the driver's minimum for this device
//! (`cuMemGetAllocationGranularity`, 2 MiB on current GPUs) unless a
//! multiple of it is asked for.
//!
//! Support is checked at construction
//! (`CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED`, which CUDA's
//! headers also call `..._VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED`): a device
//! without it answers [`StorageError::Unsupported`] so the caller can fall
//! back to paged pools over [`crate::CudaResource`]. Like every CUDA type
//! here, construction first checks that the driver library loads
//! ([`crate::cuda_available`]) and answers [`StorageError::NoDevice`]
//! otherwise. The driver calls themselves are in `vm_driver.rs`.

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, CudaStream, sys};

use crate::cuda::driver;
use crate::cuda::resource::{BACKEND, CudaResource, open_context};
use crate::error::StorageError;
use crate::physical::PhysicalMemory;
use crate::vm::check_granularity;
use crate::vm::table::VmTable;

/// Device memory of one CUDA device through the driver's virtual memory
/// management.
#[derive(Debug)]
pub struct CudaVirtualMemory {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) state: Mutex<VmTable>,
    pub(crate) granularity: u64,
    /// The device, as the driver's location id.
    pub(crate) device: sys::CUdevice,
    /// The streams whose work may touch this memory: a backend dropped with
    /// memory still mapped waits for these (and its own default stream),
    /// never for the whole device.
    pub(crate) teardown: Mutex<Vec<TeardownWait>>,
    /// The other devices every mapping is opened to (`vm_peers.rs`). Locked
    /// only while the table is, so a map and a grant never interleave.
    pub(crate) peers: Mutex<Vec<sys::CUdevice>>,
}

/// What a dropped [`CudaVirtualMemory`] waits for before it unmaps.
#[derive(Debug)]
pub(crate) enum TeardownWait {
    /// One stream a runtime named.
    Stream(Arc<CudaStream>),
    /// Every stream of a resource, as it stands at the drop (the facade's
    /// streams are named there after the backend is built).
    StreamsOf(Arc<CudaResource>),
}

impl CudaVirtualMemory {
    /// Device `ordinal` at the driver's minimum granularity.
    ///
    /// # Errors
    /// [`StorageError::NoDevice`] when the driver library cannot be loaded
    /// or the device cannot be opened; [`StorageError::Unsupported`] when
    /// the device has no virtual memory management; [`StorageError::Driver`]
    /// if its properties cannot be read.
    pub fn new(ordinal: usize) -> Result<Self, StorageError> {
        Self::from_context(open_context(ordinal)?)
    }

    /// Virtual memory on an existing context (shared with a runtime's
    /// kernels), at the driver's minimum granularity.
    ///
    /// # Errors
    /// As [`CudaVirtualMemory::new`], except `NoDevice`.
    pub fn from_context(ctx: Arc<CudaContext>) -> Result<Self, StorageError> {
        let minimum = Self::check_support(&ctx)?;
        // The table turns offsets into granules with a shift.
        check_granularity(BACKEND, minimum, 1)?;
        Self::build(ctx, minimum)
    }

    /// Virtual memory on an existing context with every size and offset a
    /// multiple of `granularity` (a power of two, a multiple of the
    /// driver's minimum, at most 2^32).
    ///
    /// # Errors
    /// As [`CudaVirtualMemory::from_context`], and
    /// [`StorageError::NotGranular`] / [`StorageError::InvalidArgument`]
    /// for a granularity the driver would refuse.
    pub fn with_granularity(ctx: Arc<CudaContext>, granularity: u64) -> Result<Self, StorageError> {
        let minimum = Self::check_support(&ctx)?;
        check_granularity(BACKEND, granularity, minimum)?;
        Self::build(ctx, granularity)
    }

    /// Whether the device of `ctx` supports virtual memory management.
    ///
    /// # Errors
    /// [`StorageError::Driver`] if the attribute cannot be read.
    pub fn is_supported(ctx: &CudaContext) -> Result<bool, StorageError> {
        let attribute =
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED;
        let supported = ctx
            .attribute(attribute)
            .map_err(driver("reading virtual memory support"))?;
        Ok(supported != 0)
    }

    /// The context chunks are created in.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// Check support; return the driver's minimum granularity.
    fn check_support(ctx: &CudaContext) -> Result<u64, StorageError> {
        if !Self::is_supported(ctx)? {
            return Err(StorageError::Unsupported {
                operation: "virtual memory management (use paged pools over CudaResource)",
                backend: BACKEND,
            });
        }
        ctx.bind_to_thread()
            .map_err(driver("binding the context to this thread"))?;
        crate::cuda::vm_driver::minimum_granularity(ctx.cu_device())
    }

    fn build(ctx: Arc<CudaContext>, granularity: u64) -> Result<Self, StorageError> {
        let total = ctx.total_mem().map_err(driver("reading total memory"))? as u64;
        Ok(Self {
            device: ctx.cu_device(),
            state: Mutex::new(VmTable::new(
                BACKEND,
                granularity,
                PhysicalMemory::new(total),
            )),
            granularity,
            ctx,
            teardown: Mutex::new(Vec::new()),
            peers: Mutex::new(Vec::new()),
        })
    }

    /// Name a stream whose work may use this memory. Dropping the backend
    /// with memory still mapped first waits for every named stream (a
    /// stream wait each), so a kernel still running there never sees its
    /// memory unmapped; nothing else ever waits for them.
    pub fn wait_at_teardown(&self, stream: Arc<CudaStream>) {
        self.teardown_waits().push(TeardownWait::Stream(stream));
    }

    /// As [`Self::wait_at_teardown`] for every stream `resource` names when
    /// the backend is dropped (the streams of a device built over it).
    pub fn wait_at_teardown_for_streams_of(&self, resource: Arc<CudaResource>) {
        self.teardown_waits()
            .push(TeardownWait::StreamsOf(resource));
    }

    fn teardown_waits(&self) -> std::sync::MutexGuard<'_, Vec<TeardownWait>> {
        // A list of streams: a panic mid-push leaves it whole.
        self.teardown.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, VmTable> {
        // Changes are recorded only after the driver succeeded, in steps
        // that cannot panic: a poisoned table is still valid.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn bind(&self) -> Result<(), StorageError> {
        self.ctx
            .bind_to_thread()
            .map_err(driver("binding the context to this thread"))
    }

    pub(crate) fn out_of_memory(&self, table: &VmTable, requested: u64) -> StorageError {
        let free = self.ctx.mem_get_info().map_or(0, |(free, _)| free as u64);
        StorageError::OutOfMemory {
            backend: BACKEND,
            refused_by: crate::Refuser::Device,
            requested,
            free,
            total: table.memory.total(),
        }
    }
}
