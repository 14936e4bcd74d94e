//! The driver's memory pool under stream-ordered allocation.
//!
//! In [`CudaAllocMode::StreamOrdered`] mode, `cuMemFreeAsync` returns memory
//! to the device's default pool, not to the device. The driver gives it back
//! at synchronization points above the pool's release threshold. So
//! `mem_info` can show less free memory than gpumem believes it has freed.
//! These calls expose the pool's own counters (the natural feed for a
//! budget that must match what the driver holds) and let a reclaim path
//! trim the pool explicitly.

use std::ffi::c_void;

use cudarc::driver::{result, sys};

use crate::cuda::resource::{BACKEND, CudaResource};
use crate::cuda::{CudaAllocMode, driver};
use crate::error::StorageError;

/// The default memory pool's counters, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DriverPoolStats {
    /// Memory the pool holds from the device now (used or cached).
    pub reserved_current: u64,
    /// Highest `reserved_current` since the pool was created.
    pub reserved_high: u64,
    /// Memory handed out by the pool and not yet freed.
    pub used_current: u64,
    /// Highest `used_current` since the pool was created.
    pub used_high: u64,
}

impl CudaResource {
    /// The device's default memory pool, if this resource allocates from it.
    fn default_pool(&self) -> Result<sys::CUmemoryPool, StorageError> {
        if self.mode != CudaAllocMode::StreamOrdered {
            return Err(StorageError::Unsupported {
                operation: "driver pool queries (synchronous allocation uses no pool)",
                backend: BACKEND,
            });
        }
        self.bind()?;
        // SAFETY: `cu_device` is the device this resource's context was
        // created on, as `result::device::get` returned it.
        unsafe { result::device::get_default_mem_pool(self.ctx.cu_device()) }
            .map_err(driver("getting the default memory pool"))
    }

    fn pool_attribute(
        pool: sys::CUmemoryPool,
        attr: sys::CUmemPool_attribute,
    ) -> Result<u64, StorageError> {
        let mut value: u64 = 0;
        // SAFETY: `pool` is the device's live default pool, and the four
        // attributes read here are `cuuint64_t`, which `value` is.
        unsafe {
            result::mem_pool::get_attribute(pool, attr, (&mut value as *mut u64).cast::<c_void>())
        }
        .map_err(driver("reading a memory-pool attribute"))?;
        Ok(value)
    }

    /// The default pool's reserved and used bytes, current and high.
    ///
    /// # Errors
    /// [`StorageError::Unsupported`] in [`CudaAllocMode::Sync`] mode.
    pub fn driver_pool_stats(&self) -> Result<DriverPoolStats, StorageError> {
        use sys::CUmemPool_attribute::*;
        let pool = self.default_pool()?;
        Ok(DriverPoolStats {
            reserved_current: Self::pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)?,
            reserved_high: Self::pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)?,
            used_current: Self::pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT)?,
            used_high: Self::pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH)?,
        })
    }

    /// Give cached pool memory back to the device, keeping at least
    /// `keep_bytes` reserved. Memory still in use is never released.
    ///
    /// # Errors
    /// [`StorageError::Unsupported`] in [`CudaAllocMode::Sync`] mode.
    pub fn trim_driver_pool(&self, keep_bytes: u64) -> Result<(), StorageError> {
        let pool = self.default_pool()?;
        let keep = usize::try_from(keep_bytes).unwrap_or(usize::MAX);
        // SAFETY: `pool` is the device's live default pool.
        unsafe { result::mem_pool::trim_to(pool, keep) }.map_err(driver("trimming the memory pool"))
    }
}
