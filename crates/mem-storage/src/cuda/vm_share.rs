//! The sharing calls of [`crate::cuda::CudaVirtualMemory`]: chunks created
//! with `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR` requested (FABRIC and the
//! RDMA flag where asked and allowed), exported with
//! `cuMemExportToShareableHandle`, imported with
//! `cuMemImportFromShareableHandle`. Each checks against the table, then
//! calls the driver, then records.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use cudarc::driver::sys::{self, CUmemAllocationHandleType as T, cudaError_enum as E};
use cudarc::driver::{DriverError, sys::CUresult};

use crate::cuda::driver;
use crate::cuda::vm::CudaVirtualMemory;
use crate::cuda::vm_driver as drv;
use crate::error::StorageError;
use crate::vm::{ChunkId, ChunkKind, ShareHandles};

const FD: T = T::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

/// Whether the driver refused a handle type or flag it may not offer here
/// (NCCL retries without it on exactly these).
fn refused_feature(e: &DriverError) -> bool {
    matches!(
        e.0,
        E::CUDA_ERROR_NOT_SUPPORTED | E::CUDA_ERROR_NOT_PERMITTED
    )
}

impl CudaVirtualMemory {
    /// The driver's recommended granularity for a chunk with the handle
    /// types of `ask`, rounded up to this backend's granularity (both are
    /// powers of two, so the larger is a multiple of the smaller); the
    /// backend's own when the driver does not say.
    pub(crate) fn recommended_share_granularity(&self, ask: ShareHandles) -> u64 {
        let mut types = FD.0;
        if ask.fabric {
            types |= T::CU_MEM_HANDLE_TYPE_FABRIC.0;
        }
        match self
            .bind()
            .ok()
            .and_then(|()| drv::recommended_granularity(self.device, types))
        {
            Some(g) if g.is_power_of_two() => g.max(self.granularity),
            _ => self.granularity,
        }
    }

    /// `cuMemCreate` with the POSIX fd and what of `ask` the driver takes:
    /// FABRIC first dropped, then the RDMA flag, on NOT_SUPPORTED or
    /// NOT_PERMITTED.
    fn create_with(
        &self,
        bytes: u64,
        ask: ShareHandles,
    ) -> Result<(u64, ShareHandles), StorageError> {
        let mut tries = vec![ask];
        if ask.fabric {
            tries.push(ShareHandles {
                fabric: false,
                ..ask
            });
        }
        if ask.rdma {
            tries.push(ShareHandles::POSIX_FD);
        }
        let mut last = None;
        for t in tries {
            let mut types = FD.0;
            if t.fabric {
                types |= T::CU_MEM_HANDLE_TYPE_FABRIC.0;
            }
            match drv::create_shareable(self.device, bytes as usize, types, t.rdma) {
                Ok(handle) => return Ok((handle, t)),
                Err(e) if refused_feature(&e) => {
                    tracing::info!(?t, err = %e, "shareable chunk refused; retrying with less");
                    last = Some(e);
                }
                Err(e) => return Err(driver("creating a shareable chunk")(e)),
            }
        }
        let e = last.unwrap_or(DriverError(E::CUDA_ERROR_NOT_SUPPORTED));
        Err(driver("creating a shareable chunk")(e))
    }

    pub(crate) fn share_create(
        &self,
        bytes: u64,
        ask: ShareHandles,
    ) -> Result<(ChunkId, ShareHandles), StorageError> {
        let mut t = self.lock();
        let r = self.bind().and_then(|()| {
            let claim = t.check_create(bytes)?;
            let (handle, granted) = self.create_with(bytes, ask)?;
            let id = t.add_chunk(claim, handle).inspect_err(|_| {
                // SAFETY: made just above and never recorded or mapped.
                let _ = unsafe { drv::release(handle) };
            })?;
            t.set_kind(id, ChunkKind::Shareable);
            Ok((id, granted))
        });
        t.counted(r)
    }

    pub(crate) fn share_export(&self, chunk: ChunkId) -> Result<OwnedFd, StorageError> {
        let mut t = self.lock();
        let r = self.bind().and_then(|()| {
            let c = t.check_kind(chunk, ChunkKind::Shareable, "exported")?;
            let mut raw: i32 = -1;
            // SAFETY: for a POSIX fd the out-parameter is an int; the handle
            // is live (checked against the table).
            unsafe { sys::cuMemExportToShareableHandle((&raw mut raw).cast(), c.handle, FD, 0) }
                .result()
                .map_err(driver("exporting a shareable chunk"))?;
            // SAFETY: the driver handed this new descriptor to the caller.
            Ok(unsafe { OwnedFd::from_raw_fd(raw) })
        });
        t.counted(r)
    }

    pub(crate) fn share_import(&self, fd: OwnedFd, bytes: u64) -> Result<ChunkId, StorageError> {
        let mut t = self.lock();
        let r = self.bind().and_then(|()| {
            t.granular("bytes", bytes)?;
            let mut handle = 0;
            // The driver reads the descriptor as an integer in the pointer
            // and does not take it: `fd` closes on return.
            let os = fd.as_raw_fd() as usize as *mut std::ffi::c_void;
            // SAFETY: a live out-parameter; `fd` is open for the call.
            let res: CUresult = unsafe { sys::cuMemImportFromShareableHandle(&mut handle, os, FD) };
            res.result().map_err(|e| match e.0 {
                E::CUDA_ERROR_INVALID_VALUE | E::CUDA_ERROR_INVALID_HANDLE => {
                    StorageError::BadShareHandle {
                        reason: "the driver does not know the descriptor as an exported chunk",
                        expected: bytes,
                        found: 0,
                    }
                }
                _ => driver("importing a shared chunk")(e),
            })?;
            t.add_imported(bytes, handle).inspect_err(|_| {
                // SAFETY: imported just above, never recorded or mapped.
                let _ = unsafe { drv::release(handle) };
            })
        });
        t.counted(r)
    }

    pub(crate) fn share_release_imported(&self, chunk: ChunkId) -> Result<(), StorageError> {
        let mut t = self.lock();
        let r = self.bind().and_then(|()| {
            let c = t.check_release_imported(chunk)?;
            // SAFETY: live and unmapped (checked), removed below: released
            // once. Releasing an imported handle drops this process's
            // reference only.
            unsafe { drv::release(c.handle) }.map_err(driver("releasing an imported chunk"))?;
            t.remove_imported(chunk);
            Ok(())
        });
        t.counted(r)
    }
}
