//! Peer access to [`CudaVirtualMemory`]: which other devices may read and
//! write its mappings.
//!
//! Mappings are opened per device with `cuMemSetAccess`, as NCCL's
//! `ncclMemAlloc` does for every peer that uses its memory: a grant opens
//! every chunk mapped now to the peer, and every chunk mapped later gets
//! the peer's access in the same `cuMemSetAccess` as the owner's (one call
//! per map, one more descriptor per peer). A revoke sets the peer's access
//! to none on every mapping. `cuCtxEnablePeerAccess` is not involved: it
//! is for `cuMemAlloc` memory, and these mappings are not.
//!
//! Both change all mappings or none: a driver refusal part-way undoes what
//! was already changed before the error is returned.

use std::sync::MutexGuard;

use cudarc::driver::{CudaContext, sys};

use crate::cuda::driver;
use crate::cuda::vm::CudaVirtualMemory;
use crate::cuda::vm_driver as drv;
use crate::error::StorageError;
use crate::vm::table_map::Mapping;

impl CudaVirtualMemory {
    /// Open every chunk mapped now, and every chunk mapped later, to
    /// `peer`'s device for reading and writing; returns the mappings
    /// changed (one `cuMemSetAccess` each). Granting a peer that has
    /// access already changes nothing.
    ///
    /// # Errors
    /// [`StorageError::InvalidArgument`] when `peer` is this device;
    /// [`StorageError::PeerUnreachable`] when the driver says `peer`'s
    /// device cannot reach this one (`cuDeviceCanAccessPeer`);
    /// [`StorageError::Driver`] when `cuMemSetAccess` refuses (nothing is
    /// left changed).
    pub fn grant_access(&self, peer: &CudaContext) -> Result<usize, StorageError> {
        let peer_device = self.check_peer(peer)?;
        self.bind()?;
        let reachable = drv::can_access_peer(peer_device, self.device)
            .map_err(driver("asking whether a peer can reach this device"))?;
        if !reachable {
            return Err(StorageError::PeerUnreachable {
                device: self.ctx.ordinal(),
                peer: peer.ordinal(),
            });
        }
        let table = self.lock();
        let mut peers = self.peer_list();
        if peers.contains(&peer_device) {
            return Ok(0);
        }
        let mappings = table.all_mappings();
        set_all(&mappings, peer_device, true)
            .map_err(driver("opening a mapped chunk to a peer"))?;
        peers.push(peer_device);
        Ok(mappings.len())
    }

    /// Take `peer`'s access away from every mapping (returns how many);
    /// chunks mapped later are not opened to it. Revoking a peer without access changes
    /// nothing. The caller proves no work of `peer` still uses the memory
    /// (as for an unmap): the driver faults such work.
    ///
    /// # Errors
    /// [`StorageError::InvalidArgument`] when `peer` is this device;
    /// [`StorageError::Driver`] when `cuMemSetAccess` refuses (nothing is
    /// left changed).
    pub fn revoke_access(&self, peer: &CudaContext) -> Result<usize, StorageError> {
        let peer_device = self.check_peer(peer)?;
        self.bind()?;
        let table = self.lock();
        let mut peers = self.peer_list();
        let Some(at) = peers.iter().position(|&d| d == peer_device) else {
            return Ok(0);
        };
        let mappings = table.all_mappings();
        set_all(&mappings, peer_device, false)
            .map_err(driver("closing a mapped chunk to a peer"))?;
        peers.remove(at);
        Ok(mappings.len())
    }

    /// The ordinals of the devices granted access, in grant order.
    pub fn peers(&self) -> Vec<usize> {
        let _table = self.lock();
        let peers = self.peer_list().clone();
        peers
            .into_iter()
            .filter_map(|d| usize::try_from(d).ok())
            .collect()
    }

    /// The devices a new mapping is opened to: this one, then its peers.
    /// Called with the table locked.
    pub(crate) fn access_list(&self) -> Vec<sys::CUdevice> {
        let mut access = vec![self.device];
        access.extend(self.peer_list().iter().copied());
        access
    }

    fn peer_list(&self) -> MutexGuard<'_, Vec<sys::CUdevice>> {
        // A list of ids changed by one push or remove: never half-written.
        self.peers.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn check_peer(&self, peer: &CudaContext) -> Result<sys::CUdevice, StorageError> {
        let peer_device = peer.cu_device();
        if peer_device == self.device {
            return Err(StorageError::InvalidArgument {
                parameter: "peer device",
                value: peer.ordinal() as u64,
                expected: "another device: a device always reaches its own memory",
            });
        }
        Ok(peer_device)
    }
}

/// Set `peer`'s access on every mapping, or on none: a refusal part-way
/// puts back the mappings already changed.
fn set_all(
    mappings: &[Mapping],
    peer: sys::CUdevice,
    grant: bool,
) -> Result<(), cudarc::driver::DriverError> {
    for (done, m) in mappings.iter().enumerate() {
        // SAFETY: a whole live mapping of this backend (from the table,
        // locked by the caller); a revoke's caller proves the peer's work
        // on it is done.
        if let Err(err) = unsafe { drv::set_access(m.addr, m.bytes as usize, &[peer], grant) } {
            for m in &mappings[..done] {
                // SAFETY: as above; this restores the access it had.
                let undone = unsafe { drv::set_access(m.addr, m.bytes as usize, &[peer], !grant) };
                if let Err(err) = undone {
                    tracing::error!(%err, chunk = %m.chunk, "restoring a peer's access failed");
                }
            }
            return Err(err);
        }
    }
    Ok(())
}
