//! The machinery of [`Device::grant_access`](super::Device::grant_access)
//! and its revoke: which checks come first, and where the access is set.
//!
//! A device's memory is of two kinds, and a peer reaches each through its
//! own calls: pages (the paged pools', the persistent pool's) through the
//! CUDA resource (`cuCtxEnablePeerAccess`, or `cuMemPoolSetAccess` for
//! stream-ordered memory; mem-storage `cuda/peers.rs`), arena chunks
//! through the CUDA virtual memory (`cuMemSetAccess` on every chunk mapped
//! now and later; `cuda/vm_peers.rs`). A grant sets both or neither: when
//! the second refuses, the first is taken back.

use std::sync::atomic::Ordering;

use mem_storage::{DriverCall, StorageError, VirtualMemory};

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
    let (Some(pages), Some(peer_cuda)) = (&owner.cuda, &peer.cuda) else {
        return Err(refuse(
            "peer access is between CUDA devices; build both with Device::cuda".into(),
        ));
    };
    let peer_ctx = peer_cuda.context().clone();
    let explain = |err: StorageError| match err {
        StorageError::InvalidArgument { .. } => {
            refuse("both are the same CUDA device, which always reaches its own memory".into())
        }
        err @ StorageError::PeerUnreachable { .. } => refuse(err.to_string()),
        err => err.into(),
    };
    let (set_pages, undo_pages) = match grant {
        true => (pages.grant_access(&peer_ctx), false),
        false => (pages.revoke_access(&peer_ctx), true),
    };
    set_pages.map_err(explain)?;
    if let Some(vm) = &owner.cuda_vm {
        let chunks = match grant {
            true => vm.grant_access(&peer_ctx),
            false => vm.revoke_access(&peer_ctx),
        };
        let chunks = chunks.map(|changed| {
            // One access call per chunk mapped now, priced as any other.
            let bytes = vm.vm_stats().mapped_bytes;
            owner
                .driver
                .charge_many(DriverCall::SetAccess, changed as u64, bytes);
        });
        if let Err(err) = chunks {
            let undone = match undo_pages {
                true => pages.grant_access(&peer_ctx),
                false => pages.revoke_access(&peer_ctx),
            };
            if let Err(undo) = undone {
                tracing::error!(%undo, "restoring a peer's access to pages failed");
            }
            return Err(explain(err));
        }
    }
    let mut peers = owner.peers.lock().unwrap_or_else(|p| p.into_inner());
    peers.retain(|name| *name != peer.name);
    if grant {
        peers.push(peer.name.clone());
    }
    // Every later map opens its chunk to the peers as well.
    owner
        .peer_count
        .store(peers.len() as u64, Ordering::Relaxed);
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
