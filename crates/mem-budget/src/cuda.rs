//! Opening a CUDA device as a backend resource.
//!
//! gpumem's CUDA resource (`cuMemAlloc`, or the stream-ordered
//! `cuMemAllocAsync` pair where the device has memory pools) belongs to
//! mem-storage; this module opens it for a device ordinal and turns its
//! failures into this crate's error. Callers have already checked
//! [`mem_storage::cuda_available`], because a missing driver library panics
//! on the first driver call.

use std::sync::Arc;

use mem_storage::{CudaResource, DeviceResource, StorageError};

use crate::error::{BudgetError, Result};

/// The backend resource for CUDA device `ordinal`.
pub(crate) fn open(ordinal: usize) -> Result<Arc<dyn DeviceResource>> {
    match CudaResource::new(ordinal) {
        Ok(resource) => Ok(Arc::new(resource)),
        Err(StorageError::NoDevice { reason }) => Err(BudgetError::DeviceUnavailable {
            reason: format!("cuda:{ordinal}: {reason}"),
        }),
        Err(other) => Err(BudgetError::kernel("open CUDA device", other)),
    }
}
