//! `HostVirtualMemory`: CUDA-style virtual memory in host memory (Linux).
//!
//! A range is an anonymous `PROT_NONE`, `MAP_PRIVATE | MAP_NORESERVE`
//! reservation: addresses only, nothing committed. Chunks are regions of
//! **one memfd** that grows with `ftruncate` as chunks are created (file
//! offsets are never reused, so a fresh chunk is always a hole and reads
//! zeros). Map is `mmap(MAP_FIXED | MAP_SHARED)` of the chunk's file region
//! over the reservation; unmap puts an anonymous `PROT_NONE` mapping back
//! (the reservation stays); release punches the region out of the file
//! (`fallocate(PUNCH_HOLE)`), which gives its pages back to the OS. Because
//! the bytes live in the file, not in the mapping, a chunk keeps them across
//! an unmap and shows them wherever it is mapped next — cuMemMap semantics.
//!
//! Why one memfd and not one per chunk: a descriptor per chunk would hit
//! the default `RLIMIT_NOFILE` (1024) at 2 GiB of 2 MiB chunks and cost an
//! open and a close per chunk; one file costs one `ftruncate` per create
//! and one `fallocate` per release, and any number of chunks fits (the
//! file may grow to 2^63 bytes, all of it holes but the live chunks).
//!
//! Chunks draw on a [`PhysicalMemory`]: their own (`new`,
//! `with_capacity`, `with_granularity`), or the one a
//! [`crate::HostResource`]'s pages draw on ([`HostVirtualMemory::sharing`],
//! `HostResource::virtual_memory`), so the device holds at most its
//! capacity in pages and chunks together, as a GPU does.
//!
//! Memory is committed on first touch, like [`crate::HostResource`], so the
//! capacity is a limit, not a cost. One lock guards the table and every
//! system call and byte access, so an unmap can never pull pages from under
//! a copy. Each mapping is its own VMA: Linux allows about 65k per process
//! (`vm.max_map_count`), 128 GiB of 2 MiB chunks.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use crate::error::StorageError;
use crate::host::vm_sys as sys;
use crate::id::DevicePtr;
use crate::physical::PhysicalMemory;
use crate::resource::MemInfo;
use crate::vm::check_granularity;
use crate::vm::table::VmTable;
use crate::vm::{
    ChunkId, DEFAULT_GRANULARITY, RangeId, VaRange, VirtualMemory, VirtualMemoryStats,
};

pub(crate) const BACKEND: &str = "host";

/// The start of a reserved range, with the provenance `mmap` gave it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Base(pub(crate) NonNull<u8>);

// SAFETY: a `Base` is an address of a reservation owned by the backend;
// its memory is only touched while the backend's mutex is held.
unsafe impl Send for Base {}

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) table: VmTable,
    /// Every chunk's bytes, at the file offset kept as its handle.
    pub(crate) fd: OwnedFd,
    /// Length of the memfd: where the next chunk starts.
    pub(crate) file_len: u64,
    /// Range base address → pointer, for the system calls.
    pub(crate) bases: HashMap<u64, Base>,
    /// The memfd of each shareable or imported chunk (its handle, the file
    /// offset, is 0): such a chunk is a file of its own, so the descriptor
    /// an importer gets opens that chunk and nothing else.
    pub(crate) own: HashMap<ChunkId, OwnedFd>,
}

/// Host memory with CUDA-style reserve / create / map, holding real bytes.
#[derive(Debug)]
pub struct HostVirtualMemory {
    state: Mutex<State>,
    granularity: u64,
}

impl HostVirtualMemory {
    /// Physical capacity of this machine's memory (16 GiB when it cannot be
    /// read), 2 MiB granularity.
    ///
    /// # Errors
    /// [`StorageError::Os`] when no memfd can be made.
    pub fn new() -> Result<Self, StorageError> {
        Self::with_capacity(crate::host::physical_memory().unwrap_or(16 << 30))
    }

    /// At most `capacity` bytes of chunks at once, 2 MiB granularity.
    ///
    /// # Errors
    /// As [`HostVirtualMemory::new`].
    pub fn with_capacity(capacity: u64) -> Result<Self, StorageError> {
        Self::with_granularity(capacity, DEFAULT_GRANULARITY)
    }

    /// At most `capacity` bytes of chunks at once, every size and offset a
    /// multiple of `granularity`.
    ///
    /// # Errors
    /// [`StorageError::InvalidArgument`] unless `granularity` is a power of
    /// two no larger than 2^32; [`StorageError::NotGranular`] unless it is a
    /// multiple of the OS page size; [`StorageError::Os`] when no memfd can
    /// be made.
    pub fn with_granularity(capacity: u64, granularity: u64) -> Result<Self, StorageError> {
        Self::sharing(PhysicalMemory::new(capacity), granularity)
    }

    /// Chunks drawn from `memory`, which pages of a resource may draw on
    /// too (`HostResource::physical_memory`): both count against one
    /// capacity, and each is refused when the other fills it.
    ///
    /// # Errors
    /// As [`HostVirtualMemory::with_granularity`].
    pub fn sharing(memory: Arc<PhysicalMemory>, granularity: u64) -> Result<Self, StorageError> {
        check_granularity(BACKEND, granularity, sys::page_size())?;
        Ok(Self {
            state: Mutex::new(State {
                table: VmTable::new(BACKEND, granularity, memory),
                fd: sys::memfd()?,
                file_len: 0,
                bases: HashMap::new(),
                own: HashMap::new(),
            }),
            granularity,
        })
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Each call records its change only after its system call succeeded,
        // in steps that cannot panic, so a poisoned state is still valid.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl State {
    /// The pointer to `offset` bytes into the range based at `base`.
    /// Callers pass only offsets the table checked to lie in the range.
    pub(crate) fn ptr(&self, base: u64, offset: u64) -> Result<NonNull<u8>, StorageError> {
        let unknown = StorageError::UnmappedAddress {
            backend: BACKEND,
            ptr: base,
            bytes: 0,
            first_unmapped: base,
        };
        let b = self.bases.get(&base).ok_or(unknown.clone())?;
        // `wrapping_add` keeps the reservation's provenance; an offset inside
        // the range never wraps, so the pointer is never null.
        NonNull::new(b.0.as_ptr().wrapping_add(offset as usize)).ok_or(unknown)
    }
}

impl Drop for HostVirtualMemory {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for r in std::mem::take(&mut state.table.ranges) {
            let id = r.id;
            let Some(base) = state.bases.remove(&r.base) else {
                continue;
            };
            // SAFETY: each range is a whole live reservation, given back once
            // here (taken out of the table); `&mut self` means no access runs.
            if let Err(err) = unsafe { sys::release(base.0, r.len as usize) } {
                tracing::error!(%err, %id, "munmap of a range failed while dropping");
            }
        }
        // The memfd closes with `state.fd`, freeing every chunk's pages.
    }
}

impl VirtualMemory for HostVirtualMemory {
    fn backend(&self) -> &'static str {
        BACKEND
    }
    fn granularity(&self) -> u64 {
        self.granularity
    }
    fn reserve_range(&self, bytes: u64) -> Result<VaRange, StorageError> {
        let mut s = self.lock();
        let r = s.reserve(bytes);
        s.table.counted(r)
    }
    fn free_range(&self, range: RangeId) -> Result<(), StorageError> {
        let mut s = self.lock();
        let r = s.free(range);
        s.table.counted(r)
    }
    fn range_info(&self, range: RangeId) -> Result<VaRange, StorageError> {
        self.lock().table.range_info(range)
    }
    fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
        let mut s = self.lock();
        let r = s.create(bytes);
        s.table.counted(r)
    }
    fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError> {
        let mut s = self.lock();
        let r = s.release(chunk);
        s.table.counted(r)
    }
    fn chunk_bytes(&self, chunk: ChunkId) -> Result<u64, StorageError> {
        self.lock().table.chunk(chunk).map(|c| c.bytes)
    }
    fn map(&self, range: RangeId, offset: u64, chunk: ChunkId) -> Result<DevicePtr, StorageError> {
        let mut s = self.lock();
        let r = s.map(range, offset, chunk).map(DevicePtr);
        s.table.counted(r)
    }
    fn unmap(&self, range: RangeId, offset: u64, bytes: u64) -> Result<Vec<ChunkId>, StorageError> {
        let mut s = self.lock();
        let r = s.unmap(range, offset, bytes);
        s.table.counted(r)
    }
    fn physical_info(&self) -> Result<MemInfo, StorageError> {
        Ok(self.lock().table.mem_info())
    }
    fn vm_stats(&self) -> VirtualMemoryStats {
        self.lock().table.stats
    }
    fn write_mapped(&self, dst: DevicePtr, data: &[u8]) -> Result<(), StorageError> {
        self.write_bytes(dst, data)
    }
    fn read_mapped(&self, src: DevicePtr, out: &mut [u8]) -> Result<(), StorageError> {
        self.read_bytes(src, out)
    }
    fn fill_mapped(&self, dst: DevicePtr, value: u8, bytes: u64) -> Result<(), StorageError> {
        self.fill_bytes(dst, value, bytes)
    }
    fn copy_mapped(&self, src: DevicePtr, dst: DevicePtr, bytes: u64) -> Result<(), StorageError> {
        self.copy_bytes(src, dst, bytes)
    }
    fn create_shareable_chunk(
        &self,
        bytes: u64,
        handles: crate::ShareHandles,
    ) -> Result<(ChunkId, crate::ShareHandles), StorageError> {
        let mut s = self.lock();
        let r = s.create_shareable(bytes);
        // A memfd has no fabric handle and no RDMA flag: the POSIX fd alone.
        let granted = crate::ShareHandles {
            fabric: false,
            rdma: false,
        };
        let _ = handles;
        s.table.counted(r).map(|c| (c, granted))
    }
    fn export_chunk(&self, chunk: ChunkId) -> Result<OwnedFd, StorageError> {
        let mut s = self.lock();
        let r = s.export(chunk);
        s.table.counted(r)
    }
    fn import_chunk(&self, handle: OwnedFd, bytes: u64) -> Result<ChunkId, StorageError> {
        let mut s = self.lock();
        let r = s.import(handle, bytes);
        s.table.counted(r)
    }
    fn release_imported(&self, chunk: ChunkId) -> Result<(), StorageError> {
        let mut s = self.lock();
        let r = s.release_imported(chunk);
        s.table.counted(r)
    }
}
