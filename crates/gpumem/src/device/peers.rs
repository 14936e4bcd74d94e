//! The machinery of [`Device::grant_access`](super::Device::grant_access)
//! and its revoke: which checks come first, and where the access is set.
//!
//! Access is set on the device's CUDA virtual memory (mem-storage
//! `cuda/vm_peers.rs`), which opens every chunk mapped now and later to the
//! peer. It is granted only where all of a device's memory is arena
//! memory: a paged pool's pages are `cuMemAlloc`/pool memory, which a peer
//! reaches through other calls (`cuCtxEnablePeerAccess`,
//! `cuMemPoolSetAccess`) with other lifetimes, and a grant that covered
//! some buffers and not others would fault later, far from its cause.

use std::sync::Arc;

use mem_storage::{CudaVirtualMemory, StorageError};

use crate::error::{GpuMemError, Result};
use crate::shared::DeviceShared;

/// Grant (`grant`) or revoke `peer`'s access to `owner`'s memory.
pub(crate) fn set(owner: &DeviceShared, peer: &DeviceShared, grant: bool) -> Result<()> {
    let operation = if grant {
        "grant_access"
    } else {
        "revoke_access"
    };
    let refuse = |reason: String| GpuMemError::Peer {
        operation,
        device: owner.name.clone(),
        peer: peer.name.clone(),
        reason,
    };
    let vm = arena_memory(owner).map_err(refuse)?;
    let peer_ctx = match &peer.cuda {
        Some(cuda) => cuda.context().clone(),
        None => return Err(refuse("the peer is not a CUDA device".into())),
    };
    let done = match grant {
        true => vm.grant_access(&peer_ctx),
        false => vm.revoke_access(&peer_ctx),
    };
    match done {
        Ok(()) => {}
        Err(StorageError::InvalidArgument { .. }) => {
            return Err(refuse(
                "both are the same CUDA device, which always reaches its own memory".into(),
            ));
        }
        Err(err @ StorageError::PeerUnreachable { .. }) => return Err(refuse(err.to_string())),
        Err(err) => return Err(err.into()),
    }
    let mut peers = owner.peers.lock().unwrap_or_else(|p| p.into_inner());
    peers.retain(|name| *name != peer.name);
    if grant {
        peers.push(peer.name.clone());
    }
    Ok(())
}

/// The names of the devices granted access.
pub(crate) fn names(owner: &DeviceShared) -> Vec<String> {
    owner
        .peers
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
}

/// The device's CUDA virtual memory, when all its memory is arena memory;
/// otherwise why a peer cannot be granted it.
fn arena_memory(owner: &DeviceShared) -> std::result::Result<&Arc<CudaVirtualMemory>, String> {
    if owner.cuda.is_none() {
        return Err("peer access is between CUDA devices; this device is not one".into());
    }
    let all_arenas = super::assemble::all_in_arenas(&owner.config, owner.cuda_vm.is_some());
    match &owner.cuda_vm {
        Some(vm) if all_arenas => Ok(vm),
        _ => Err(format!(
            "peer access covers arena memory, and this device's memory is not all in arenas \
             (pools: {}{}); build it with pools:arenas",
            crate::config::layout::format_layout(&owner.config.pools),
            owner
                .arena_fallback
                .as_deref()
                .map(|why| format!(", arenas fell back: {why}"))
                .unwrap_or_default(),
        )),
    }
}
