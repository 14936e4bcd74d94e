//! Peer access to [`CudaResource`]'s pages: whole driver allocations,
//! which a peer reaches through other calls than arena mappings do.
//!
//! `cuMemAlloc` memory is opened to a peer by `cuCtxEnablePeerAccess` made
//! in the peer's context (it then reaches every allocation of this
//! context, now and later); stream-ordered memory comes from the device's
//! default pool, which `cuMemPoolSetAccess` opens. Either way a grant is
//! one call whatever the number of pages, and covers pages allocated later.

use cudarc::driver::{CudaContext, DriverError, sys};

use crate::cuda::resource::CudaResource;
use crate::cuda::vm_driver::can_access_peer;
use crate::cuda::{CudaAllocMode, driver};
use crate::error::StorageError;

impl CudaResource {
    /// Open this resource's allocations, now and later, to `peer`'s device
    /// for reading and writing. Granting twice changes nothing.
    ///
    /// # Errors
    /// [`StorageError::InvalidArgument`] when `peer` is this device;
    /// [`StorageError::PeerUnreachable`] without a peer link;
    /// [`StorageError::Driver`] when the driver refuses.
    pub fn grant_access(&self, peer: &CudaContext) -> Result<(), StorageError> {
        self.check_peer(peer)?;
        match self.mode() {
            CudaAllocMode::Sync => {
                peer.bind_to_thread()
                    .map_err(driver("binding the peer's context"))?;
                // SAFETY: this resource's live context, named from the
                // peer's, which is current.
                let enabled = unsafe { sys::cuCtxEnablePeerAccess(self.ctx.cu_ctx(), 0) };
                let done = match enabled {
                    sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
                    other => other.result(),
                };
                let rebound = self.ctx.bind_to_thread();
                done.map_err(driver("enabling a peer's access"))?;
                rebound.map_err(driver("binding the context again"))
            }
            CudaAllocMode::StreamOrdered => self
                .set_pool_access(peer, true)
                .map_err(driver("opening the memory pool to a peer")),
        }
    }

    /// Take `peer`'s access to this resource's allocations away. The
    /// caller proves no work of `peer` still uses them. Revoking a peer
    /// without access changes nothing.
    ///
    /// # Errors
    /// As [`CudaResource::grant_access`], except `PeerUnreachable`.
    pub fn revoke_access(&self, peer: &CudaContext) -> Result<(), StorageError> {
        if peer.cu_device() == self.ctx.cu_device() {
            return self.check_peer(peer);
        }
        match self.mode() {
            CudaAllocMode::Sync => {
                peer.bind_to_thread()
                    .map_err(driver("binding the peer's context"))?;
                // SAFETY: this resource's live context, named from the
                // peer's, which is current.
                let disabled = unsafe { sys::cuCtxDisablePeerAccess(self.ctx.cu_ctx()) };
                let done = match disabled {
                    sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED => Ok(()),
                    other => other.result(),
                };
                let rebound = self.ctx.bind_to_thread();
                done.map_err(driver("disabling a peer's access"))?;
                rebound.map_err(driver("binding the context again"))
            }
            CudaAllocMode::StreamOrdered => self
                .set_pool_access(peer, false)
                .map_err(driver("closing the memory pool to a peer")),
        }
    }

    fn check_peer(&self, peer: &CudaContext) -> Result<(), StorageError> {
        let (device, peer_device) = (self.ctx.cu_device(), peer.cu_device());
        if peer_device == device {
            return Err(StorageError::InvalidArgument {
                parameter: "peer device",
                value: peer.ordinal() as u64,
                expected: "another device: a device always reaches its own memory",
            });
        }
        let reachable = can_access_peer(peer_device, device)
            .map_err(driver("asking whether a peer can reach this device"))?;
        match reachable {
            true => Ok(()),
            false => Err(StorageError::PeerUnreachable {
                device: self.ctx.ordinal(),
                peer: peer.ordinal(),
            }),
        }
    }

    /// Set `peer`'s access to the device's default memory pool.
    fn set_pool_access(&self, peer: &CudaContext, grant: bool) -> Result<(), DriverError> {
        self.ctx.bind_to_thread()?;
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: `pool` is a live out-parameter; the device is this
        // context's.
        unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, self.ctx.cu_device()) }.result()?;
        let access = sys::CUmemAccessDesc {
            location: sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: peer.cu_device(),
            },
            flags: match grant {
                true => sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
                false => sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_NONE,
            },
        };
        // SAFETY: the device's live default pool; one live descriptor.
        unsafe { sys::cuMemPoolSetAccess(pool, &access, 1) }.result()
    }
}
