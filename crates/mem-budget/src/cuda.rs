//! Opening a CUDA device as a backend resource.
//!
//! gpumem's CUDA resources (`cuMemAlloc` and the stream-ordered
//! `cuMemAllocAsync` pair) belong to mem-storage; this module only picks one
//! for a device ordinal. Callers have already checked
//! [`mem_storage::cuda_available`].

use std::sync::Arc;

use mem_storage::DeviceResource;

use crate::error::{BudgetError, Result};

/// The backend resource for CUDA device `ordinal`.
pub(crate) fn open(ordinal: usize) -> Result<Arc<dyn DeviceResource>> {
    Err(BudgetError::DeviceUnavailable {
        reason: format!(
            "cuda:{ordinal}: this build of mem-storage provides no CUDA resource yet; use BudgetDevice::host()"
        ),
    })
}
