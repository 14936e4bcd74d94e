//! The machinery behind the sharing API: making a shareable buffer on
//! chunks of its own, describing it for another process, and checking and
//! mapping another process's description. The types and their methods are
//! in `mod.rs`.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use mem_storage::{ShareHandles, VirtualMemory};

use super::region::{Region, Side};
use super::{
    Exportable, ImportedBuffer, MAX_SHARED_CHUNKS, ShareableBuffer, SharedBuffer, SharedChunk,
};
use crate::error::{GpuMemError, Result};
use crate::shared::DeviceShared;

/// The virtual memory shareable buffers are made with, and what to ask for.
fn sharing_vm(device: &DeviceShared) -> Result<(Arc<dyn VirtualMemory>, ShareHandles)> {
    let unavailable = |reason| GpuMemError::SharingUnavailable {
        device: device.name.clone(),
        reason,
    };
    let ask = device
        .config
        .share
        .ok_or_else(|| unavailable("the configuration does not ask for shareable buffers"))?;
    let vm = device
        .virtual_memory
        .clone()
        .ok_or_else(|| unavailable("the device's pools use no virtual memory"))?;
    Ok((vm, ask))
}

/// Chunk sizes for `len` bytes: granule-padded, at most the arenas' largest
/// chunk each (one driver handle per chunk, as a descriptor carries).
pub(super) fn chunk_sizes(len: u64, granularity: u64, max_chunk: u64) -> Vec<u64> {
    let padded = len.div_ceil(granularity) * granularity;
    let max = (max_chunk / granularity).max(1) * granularity;
    let mut sizes = vec![max; (padded / max) as usize];
    if !padded.is_multiple_of(max) {
        sizes.push(padded % max);
    }
    sizes
}

pub(crate) fn reserve(device: &Arc<DeviceShared>, len: u64) -> Result<ShareableBuffer> {
    let (vm, ask) = sharing_vm(device)?;
    if len == 0 {
        return Err(GpuMemError::NotExportable {
            bytes: 0,
            reason: "a shareable buffer holds at least one byte",
        });
    }
    let max_chunk = device
        .config
        .arena_max_chunk
        .unwrap_or(mem_pools::DEFAULT_MAX_CHUNK);
    // The driver's recommended granularity for chunks of these handle
    // types (what NCCL sizes its chunks by), at least the arenas'.
    let sizes = chunk_sizes(len, vm.share_granularity(ask), max_chunk);
    if sizes.len() > MAX_SHARED_CHUNKS {
        return Err(GpuMemError::NotExportable {
            bytes: len,
            reason: "it would take more chunks than one descriptor carries (253); \
                     raise arena_max_chunk or share it in parts",
        });
    }
    let mut granted = ask;
    let tally = device.sharing.clone();
    let region = Region::build(
        vm.clone(),
        &sizes,
        len,
        Side::Exported,
        tally,
        |_, bytes| {
            let (chunk, got) = vm.create_shareable_chunk(bytes, ask)?;
            granted = got;
            Ok(chunk)
        },
    )?;
    if granted != ask {
        tracing::info!(?ask, ?granted, device = %device.name, "the driver refused part of the share request");
    }
    // A fresh host chunk is a hole in a new memfd and reads zeros; a
    // driver's chunk may hold what this process freed before.
    if vm.backend() != "host" {
        vm.fill_mapped(region.base(), 0, region.mapped_len())?;
    }
    Ok(ShareableBuffer {
        region,
        device: device.clone(),
        granted,
    })
}

pub(crate) fn export(device: &Arc<DeviceShared>, buffer: &impl Exportable) -> Result<SharedBuffer> {
    let buffer = buffer.shareable()?;
    if !Arc::ptr_eq(device, &buffer.device) {
        return Err(GpuMemError::NotExportable {
            bytes: buffer.len(),
            reason: "it belongs to another device than this stream's",
        });
    }
    let r = &buffer.region;
    let mut chunks = Vec::with_capacity(r.chunks.len());
    let mut offset = 0;
    for &(chunk, bytes) in &r.chunks {
        chunks.push(SharedChunk {
            fd: r.vm.export_chunk(chunk)?,
            offset,
            bytes,
            used: bytes.min(r.len.saturating_sub(offset)),
        });
        offset += bytes;
    }
    Ok(SharedBuffer {
        device: device.name.clone(),
        len: r.len,
        chunks,
    })
}

/// The device kind of a name (`cuda` of `cuda:1`).
fn kind(name: &str) -> &str {
    name.split(':').next().unwrap_or(name)
}

/// Check that `shared` lays whole chunks end to end over its length.
pub(super) fn check(shared: &SharedBuffer, granularity: u64) -> Result<()> {
    let bad = |reason: String| Err(GpuMemError::BadSharedBuffer { reason });
    let n = shared.chunks.len();
    if n == 0 || n > MAX_SHARED_CHUNKS {
        return bad(format!("{n} chunks (expected 1..={MAX_SHARED_CHUNKS})"));
    }
    let mut offset = 0u64;
    for (i, c) in shared.chunks.iter().enumerate() {
        // Every chunk holds bytes of the buffer: padding is never a chunk
        // of its own.
        let used = c.bytes.min(shared.len.saturating_sub(offset));
        if c.offset != offset || c.used != used || used == 0 || !c.bytes.is_multiple_of(granularity)
        {
            return bad(format!(
                "chunk {i} says offset {} bytes {} used {}, expected offset {offset}, a positive \
                 multiple of {granularity} bytes, used {used} (more than 0)",
                c.offset, c.bytes, c.used
            ));
        }
        offset = offset.saturating_add(c.bytes);
    }
    if offset < shared.len {
        return bad(format!(
            "the chunks hold {offset} bytes for a buffer of {} bytes",
            shared.len
        ));
    }
    Ok(())
}

pub(crate) fn import(device: &Arc<DeviceShared>, shared: SharedBuffer) -> Result<ImportedBuffer> {
    let vm = device
        .virtual_memory
        .clone()
        .ok_or(GpuMemError::SharingUnavailable {
            device: device.name.clone(),
            reason: "the device's pools use no virtual memory to map the chunks with",
        })?;
    if kind(&shared.device) != kind(&device.name) {
        return Err(GpuMemError::BadSharedBuffer {
            reason: format!(
                "exported by {}, which {} cannot map",
                shared.device, device.name
            ),
        });
    }
    check(&shared, vm.granularity())?;
    let sizes: Vec<u64> = shared.chunks.iter().map(|c| c.bytes).collect();
    let mut fds: Vec<Option<OwnedFd>> = shared.chunks.into_iter().map(|c| Some(c.fd)).collect();
    let region = Region::build(
        vm.clone(),
        &sizes,
        shared.len,
        Side::Imported,
        device.sharing.clone(),
        |i, bytes| {
            let fd = fds.get_mut(i).and_then(Option::take);
            let fd = fd.ok_or(mem_storage::StorageError::InvalidArgument {
                parameter: "chunk index",
                value: i as u64,
                expected: "each chunk of the descriptor once",
            })?;
            vm.import_chunk(fd, bytes)
        },
    )?;
    Ok(ImportedBuffer {
        region,
        exporter: shared.device,
    })
}
