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
            CudaAllocMode::Sync => self.in_peer_context(
                peer,
                "enabling a peer's access",
                sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
                // SAFETY: this resource's live context, named from the
                // peer's, which `in_peer_context` made current.
                || unsafe { sys::cuCtxEnablePeerAccess(self.ctx.cu_ctx(), 0) },
            ),
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
            CudaAllocMode::Sync => self.in_peer_context(
                peer,
                "disabling a peer's access",
                sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
                // SAFETY: this resource's live context, named from the
                // peer's, which `in_peer_context` made current.
                || unsafe { sys::cuCtxDisablePeerAccess(self.ctx.cu_ctx()) },
            ),
            CudaAllocMode::StreamOrdered => self
                .set_pool_access(peer, false)
                .map_err(driver("closing the memory pool to a peer")),
        }
    }

    /// Make `call` with `peer`'s context current (peer access is switched
    /// from the side that reads), taking `already` (the state asked for is
    /// the state there is) as success, then bind this resource's context
    /// again, whatever the call returned.
    fn in_peer_context(
        &self,
        peer: &CudaContext,
        what: &'static str,
        already: sys::cudaError_enum,
        call: impl FnOnce() -> sys::CUresult,
    ) -> Result<(), StorageError> {
        peer.bind_to_thread()
            .map_err(driver("binding the peer's context"))?;
        let done = match call() {
            code if code == already => Ok(()),
            other => other.result(),
        };
        let rebound = self.ctx.bind_to_thread();
        done.map_err(driver(what))?;
        rebound.map_err(driver("binding the context again"))
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
