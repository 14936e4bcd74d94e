//! [`ChunkHooks`], [`HookedVirtualMemory`] and [`HookedResource`]: a
//! library that must know the physical memory under a device's buffers
//! (NCCL's `ncclCommRegister`, UCX, `ibv_reg_mr` for RDMA) is told of each
//! chunk once it is mapped and again before it is unmapped, and of each
//! page (a whole driver allocation, e.g. the persistent pool's) once it is
//! allocated and again before it is freed.
//!
//! The contract, which the virtual-memory adaptor keeps for any virtual
//! memory under it (the resource adaptor keeps the same for pages, with
//! allocate and deallocate in place of map and unmap):
//! - [`ChunkHooks::mapped`] is called once per physical chunk, after the
//!   chunk is mapped and given access, before the map returns, so before
//!   any slice in it can be handed out. An error refuses the map: the
//!   chunk is unmapped again and the map answers
//!   [`StorageError::HookRefused`], so nothing stays mapped (the caller
//!   releases the chunk as after any refused map).
//! - [`ChunkHooks::unmapping`] is called once per chunk before that chunk
//!   is unmapped (an unmap of several chunks is done chunk by chunk), and
//!   for every chunk still mapped when the adaptor is dropped.
//! - The hooks run outside every lock of the adaptor and of the memory
//!   under it (its table, a budget's ledger). They run on the thread that
//!   maps, which in gpumem holds only its own stream's engine: a hook that
//!   blocks delays that stream's reservation and no other stream's.

mod resource;
mod table;

use std::fmt;
use std::sync::Arc;

use crate::error::StorageError;
use crate::id::DevicePtr;
use crate::vm::{ChunkId, RangeId, VaRange, VirtualMemory};
pub use resource::HookedResource;
use table::Mapped;

/// One piece of physical memory as a device addresses it: an arena chunk
/// as mapped, or a page (a whole allocation) as allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MappedChunk {
    /// The chunk (its backend id); `None` for a page.
    pub chunk: Option<ChunkId>,
    /// Its first byte's device address.
    pub ptr: DevicePtr,
    /// Its length in bytes.
    pub bytes: u64,
}

/// Told of each physical chunk a [`HookedVirtualMemory`] maps and unmaps.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use mem_storage::{ChunkHooks, HookedVirtualMemory, MappedChunk, SimulatedVirtualMemory, VirtualMemory};
///
/// #[derive(Default)]
/// struct Registry(Mutex<Vec<MappedChunk>>);
/// impl ChunkHooks for Registry {
///     fn mapped(&self, chunk: MappedChunk) -> Result<(), String> {
///         self.0.lock().unwrap().push(chunk); // e.g. ncclCommRegister
///         Ok(())
///     }
///     fn unmapping(&self, chunk: MappedChunk) {
///         self.0.lock().unwrap().retain(|c| *c != chunk); // e.g. ncclCommDeregister
///     }
/// }
///
/// let registry = Arc::new(Registry::default());
/// let vm = HookedVirtualMemory::new(SimulatedVirtualMemory::new(1 << 30), registry.clone());
/// let range = vm.reserve_range(4 * vm.granularity()).unwrap();
/// let chunk = vm.create_chunk(vm.granularity()).unwrap();
/// let ptr = vm.map(range.id, 0, chunk).unwrap();
/// assert_eq!(registry.0.lock().unwrap()[0].ptr, ptr);
/// vm.unmap(range.id, 0, vm.granularity()).unwrap();
/// assert!(registry.0.lock().unwrap().is_empty());
/// # vm.release_chunk(chunk).unwrap(); vm.free_range(range.id).unwrap();
/// ```
pub trait ChunkHooks: Send + Sync {
    /// `chunk` is mapped and accessible; nothing in it is handed out yet.
    /// An `Err` (its text says why) refuses the map.
    ///
    /// # Errors
    /// Whatever the library refused, in words; the map is undone.
    fn mapped(&self, chunk: MappedChunk) -> Result<(), String>;

    /// `chunk` is about to be unmapped: deregister it now. Work that may
    /// still use the memory has completed.
    fn unmapping(&self, chunk: MappedChunk);
}

/// A virtual memory whose every chunk mapping is announced to
/// [`ChunkHooks`] (see the module's contract).
pub struct HookedVirtualMemory<V> {
    inner: V,
    hooks: Arc<dyn ChunkHooks>,
    mapped: Mapped,
}

impl<V: VirtualMemory> HookedVirtualMemory<V> {
    /// `inner`, its maps and unmaps announced to `hooks`.
    pub fn new(inner: V, hooks: Arc<dyn ChunkHooks>) -> Self {
        Self {
            inner,
            hooks,
            mapped: Mapped::default(),
        }
    }

    /// The memory inside.
    pub fn inner(&self) -> &V {
        &self.inner
    }
}

impl<V> fmt::Debug for HookedVirtualMemory<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookedVirtualMemory")
            .field("mapped_chunks", &self.mapped.len())
            .finish_non_exhaustive()
    }
}

impl<V: VirtualMemory> VirtualMemory for HookedVirtualMemory<V> {
    fn map(&self, range: RangeId, offset: u64, chunk: ChunkId) -> Result<DevicePtr, StorageError> {
        let ptr = self.inner.map(range, offset, chunk)?;
        let bytes = self.inner.chunk_bytes(chunk)?;
        let mapped = MappedChunk {
            chunk: Some(chunk),
            ptr,
            bytes,
        };
        if let Err(reason) = self.hooks.mapped(mapped) {
            if let Err(err) = self.inner.unmap(range, offset, bytes) {
                tracing::error!(%err, %chunk, "unmapping a chunk its hook refused failed");
            }
            return Err(StorageError::HookRefused {
                what: "chunk",
                ptr,
                bytes,
                reason,
            });
        }
        self.mapped.insert((range.0, offset), mapped);
        Ok(ptr)
    }

    fn unmap(&self, range: RangeId, offset: u64, bytes: u64) -> Result<Vec<ChunkId>, StorageError> {
        let doomed = self.mapped.within(range.0, offset, bytes);
        let mut next = offset;
        let whole = doomed.iter().all(|&(at, m)| {
            let starts_here = at == next;
            next = at.saturating_add(m.bytes);
            starts_here
        }) && next == offset.saturating_add(bytes);
        if !whole {
            // Not whole announced mappings: the memory inside refuses it
            // (and says why) before changing anything.
            return self.inner.unmap(range, offset, bytes);
        }
        let mut chunks = Vec::with_capacity(doomed.len());
        for (at, m) in doomed {
            self.hooks.unmapping(m);
            match self.inner.unmap(range, at, m.bytes) {
                Ok(gone) => {
                    self.mapped.remove((range.0, at));
                    chunks.extend(gone);
                }
                Err(err) => {
                    // Still mapped: announce it again so that what is mapped
                    // stays what is registered.
                    if let Err(reason) = self.hooks.mapped(m) {
                        tracing::error!(%reason, ptr = m.ptr.0, "re-registering a chunk whose unmap failed");
                    }
                    return Err(err);
                }
            }
        }
        Ok(chunks)
    }

    fn reserve_range(&self, bytes: u64) -> Result<VaRange, StorageError> {
        self.inner.reserve_range(bytes)
    }
    fn free_range(&self, range: RangeId) -> Result<(), StorageError> {
        self.inner.free_range(range)
    }
    fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
        self.inner.create_chunk(bytes)
    }
    fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError> {
        self.inner.release_chunk(chunk)
    }
    crate::forward_virtual_memory!(inner);
}

impl<V> Drop for HookedVirtualMemory<V> {
    fn drop(&mut self) {
        // The memory inside unmaps what is still mapped when it drops,
        // right after this: deregister first.
        for m in self.mapped.take_all() {
            self.hooks.unmapping(m);
        }
    }
}

#[cfg(test)]
mod tests;
