//! Peer access to [`CudaResource`]'s pages: whole driver allocations,
//! which a peer reaches through other calls than arena mappings do.
//!
//! `cuMemAlloc` memory is opened to a peer by `cuCtxEnablePeerAccess` made
//! in the peer's context (it then reaches every allocation of this
//! context, now and later); stream-ordered memory comes from the device's
//! default pool, which `cuMemPoolSetAccess` opens. Either way a grant is
//! one call whatever the number of pages, and covers pages allocated later.
//!
//! Either way, too, the driver opens memory wider than one resource's:
//! every resource on the same context (two `Device`s of one ordinal's
//! primary context, say), or for pool memory on the same card, shares one
//! grant per peer. So grants are counted process
//! wide: the first resource to grant a peer opens the card to it, the last
//! to revoke (or to be dropped) closes it, and a resource dropped with a
//! grant in force gives it back, so that no open door outlives every
//! resource that asked for it. A door the driver reports open before
//! gpumem's first grant (opened by other code in the process) is left open.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

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
    pub fn grant_access(&self, peer: &Arc<CudaContext>) -> Result<(), StorageError> {
        self.check_peer(peer)?;
        let mut granted = self.granted();
        if granted.iter().any(|p| p.cu_device() == peer.cu_device()) {
            return Ok(());
        }
        let mut grants = page_grants();
        let key = self.grant_key(peer);
        match grants.get_mut(&key) {
            Some(holders) => holders.count += 1,
            None => {
                let opened_here = self.open_pages(peer)?;
                grants.insert(
                    key,
                    Holders {
                        count: 1,
                        opened_here,
                    },
                );
            }
        }
        granted.push(Arc::clone(peer));
        Ok(())
    }

    /// Take `peer`'s access to this resource's allocations away. The
    /// caller proves no work of `peer` still uses them. Revoking a peer
    /// without access changes nothing.
    ///
    /// # Errors
    /// As [`CudaResource::grant_access`], except `PeerUnreachable`.
    ///
    /// Another resource on this context (for pool memory: this card) that
    /// granted the same peer keeps the pages open to it: the driver opens
    /// them as a whole (see the module's documentation); the last grant
    /// revoked closes them.
    pub fn revoke_access(&self, peer: &CudaContext) -> Result<(), StorageError> {
        if peer.cu_device() == self.ctx.cu_device() {
            return self.check_peer(peer);
        }
        let mut granted = self.granted();
        let Some(at) = granted
            .iter()
            .position(|p| p.cu_device() == peer.cu_device())
        else {
            return Ok(());
        };
        self.release_grant(&mut page_grants(), peer)?;
        granted.swap_remove(at);
        Ok(())
    }

    /// Give back every grant still in force (a resource being dropped):
    /// a refusal is logged, and the grant forgotten either way.
    pub(crate) fn release_grants(&mut self) {
        let granted = std::mem::take(self.granted.get_mut().unwrap_or_else(|p| p.into_inner()));
        let mut grants = page_grants();
        for peer in granted {
            if let Err(err) = self.release_grant(&mut grants, &peer) {
                tracing::error!(%err, peer = peer.ordinal(), "closing pages to a peer at teardown failed");
            }
        }
    }

    /// Drop this resource's hold on `peer`'s grant; the last holder closes
    /// the door (unless other code had opened it first). On a refusal the
    /// count is unchanged.
    fn release_grant(
        &self,
        grants: &mut BTreeMap<Door, Holders>,
        peer: &CudaContext,
    ) -> Result<(), StorageError> {
        let key = self.grant_key(peer);
        let Some(holders) = grants.get_mut(&key) else {
            return Ok(());
        };
        if holders.count > 1 {
            holders.count -= 1;
            return Ok(());
        }
        if holders.opened_here {
            self.close_pages(peer)?;
        }
        grants.remove(&key);
        Ok(())
    }

    /// Open the card's pages to `peer`: whether this call opened them
    /// (false: other code had).
    fn open_pages(&self, peer: &CudaContext) -> Result<bool, StorageError> {
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
                .map(|()| true)
                .map_err(driver("opening the memory pool to a peer")),
        }
    }

    fn close_pages(&self, peer: &CudaContext) -> Result<(), StorageError> {
        match self.mode() {
            CudaAllocMode::Sync => self
                .in_peer_context(
                    peer,
                    "disabling a peer's access",
                    sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_NOT_ENABLED,
                    // SAFETY: this resource's live context, named from the
                    // peer's, which `in_peer_context` made current.
                    || unsafe { sys::cuCtxDisablePeerAccess(self.ctx.cu_ctx()) },
                )
                .map(drop),
            CudaAllocMode::StreamOrdered => self
                .set_pool_access(peer, false)
                .map_err(driver("closing the memory pool to a peer")),
        }
    }

    /// The door a grant to `peer` opens: a context pair for `cuMemAlloc`
    /// memory (peer access joins contexts), a device pair for the
    /// device's pool. Both contexts stay alive while the door is counted:
    /// this resource holds its own and its `granted` list the peer's.
    fn grant_key(&self, peer: &CudaContext) -> Door {
        match self.mode() {
            CudaAllocMode::Sync => {
                Door::Contexts(self.ctx.cu_ctx() as usize, peer.cu_ctx() as usize)
            }
            CudaAllocMode::StreamOrdered => Door::Pool(self.ctx.cu_device(), peer.cu_device()),
        }
    }

    fn granted(&self) -> MutexGuard<'_, Vec<Arc<CudaContext>>> {
        // Whole pushes and removes: a poisoned list is still consistent.
        self.granted.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Make `call` with `peer`'s context current (peer access is switched
    /// from the side that reads), taking `already` (the state asked for is
    /// the state there is) as success, then bind this resource's context
    /// again, whatever the call returned. `Ok(false)`: it was `already`.
    fn in_peer_context(
        &self,
        peer: &CudaContext,
        what: &'static str,
        already: sys::cudaError_enum,
        call: impl FnOnce() -> sys::CUresult,
    ) -> Result<bool, StorageError> {
        peer.bind_to_thread()
            .map_err(driver("binding the peer's context"))?;
        let done = match call() {
            code if code == already => Ok(false),
            other => other.result().map(|()| true),
        };
        let rebound = self.ctx.bind_to_thread();
        let changed = done.map_err(driver(what))?;
        rebound.map_err(driver("binding the context again"))?;
        Ok(changed)
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

/// A door the driver opens to a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Door {
    /// The owner context's allocations, to the peer context.
    Contexts(usize, usize),
    /// The owner device's default pool, to the peer device.
    Pool(sys::CUdevice, sys::CUdevice),
}

/// The resources holding one door open.
#[derive(Debug)]
struct Holders {
    count: usize,
    /// Whether gpumem opened it (and so closes it with the last holder).
    opened_here: bool,
}

/// The doors gpumem holds open in this process.
static PAGE_GRANTS: Mutex<BTreeMap<Door, Holders>> = Mutex::new(BTreeMap::new());

fn page_grants() -> MutexGuard<'static, BTreeMap<Door, Holders>> {
    // Each change is one insert, update or remove: a poisoned map is
    // still consistent.
    PAGE_GRANTS.lock().unwrap_or_else(|p| p.into_inner())
}
