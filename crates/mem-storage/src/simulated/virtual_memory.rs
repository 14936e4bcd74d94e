//! `SimulatedVirtualMemory`: virtual memory as addresses and counts only.
//!
//! The virtual-memory twin of [`crate::SimulatedResource`]: ranges get
//! made-up addresses from the same next-fit space (from 2^44 up, aligned to
//! the granularity), chunks are byte counts against a stated capacity, and
//! maps and unmaps are entries in the shared table. Nothing is allocated or
//! touched, so an 80 GiB arena workload replays on a laptop and its map /
//! unmap traffic is counted exactly. Validation is the host backend's,
//! call for call (the same [`VmTable`]), so a refusal here is one there.
//!
//! Chunks draw on a [`PhysicalMemory`]: their own (`new`,
//! `with_granularity`), or the one a [`crate::SimulatedResource`]'s pages
//! draw on ([`SimulatedVirtualMemory::sharing`],
//! `SimulatedResource::virtual_memory`), so a simulated device holds at
//! most its size in pages and chunks together, as a GPU does.
//!
//! Cost per call: one lock and O(1) table work (O(k) for an unmap or
//! access spanning k chunks; see `table.rs`). No bytes exist:
//! `write_mapped` and `read_mapped` are [`StorageError::Unsupported`];
//! `fill_mapped` and `copy_mapped` check that their spans are mapped and
//! succeed without doing anything.

use std::sync::{Arc, Mutex};

use crate::error::StorageError;
use crate::id::DevicePtr;
use crate::physical::PhysicalMemory;
use crate::resource::MemInfo;
use crate::simulated::address_space::{AddressSpace, CHUNK_ADDRESSES};
use crate::vm::check_granularity;
use crate::vm::table::VmTable;
use crate::vm::{
    ChunkId, DEFAULT_GRANULARITY, RangeId, VaRange, VirtualMemory, VirtualMemoryStats,
};

const BACKEND: &str = "sim";

/// The largest range: what the address space can always hand out.
const MAX_RANGE: u64 = 1 << 62;

#[derive(Debug)]
struct State {
    table: VmTable,
    space: AddressSpace,
}

/// A device of a stated size with CUDA-style virtual memory and no bytes.
#[derive(Debug)]
pub struct SimulatedVirtualMemory {
    state: Mutex<State>,
    granularity: u64,
}

impl SimulatedVirtualMemory {
    /// `capacity` bytes of chunks at most, CUDA's 2 MiB granularity.
    pub fn new(capacity: u64) -> Self {
        Self::build(PhysicalMemory::new(capacity), DEFAULT_GRANULARITY)
    }

    /// `capacity` bytes of chunks at most, every size and offset a multiple
    /// of `granularity`.
    ///
    /// # Errors
    /// [`StorageError::InvalidArgument`] unless `granularity` is a power of
    /// two no larger than 2^32.
    pub fn with_granularity(capacity: u64, granularity: u64) -> Result<Self, StorageError> {
        Self::sharing(PhysicalMemory::new(capacity), granularity)
    }

    /// Chunks drawn from `memory`, which pages of a resource may draw on
    /// too (`SimulatedResource::physical_memory`): both count against one
    /// capacity, and each is refused when the other fills it.
    ///
    /// # Errors
    /// As [`SimulatedVirtualMemory::with_granularity`].
    pub fn sharing(memory: Arc<PhysicalMemory>, granularity: u64) -> Result<Self, StorageError> {
        check_granularity(BACKEND, granularity, 1)?;
        Ok(Self::build(memory, granularity))
    }

    /// `granularity` must be valid (checked by the public constructors).
    pub(crate) fn build(memory: Arc<PhysicalMemory>, granularity: u64) -> Self {
        Self {
            state: Mutex::new(State {
                table: VmTable::new(BACKEND, granularity, memory),
                space: AddressSpace::new(granularity, CHUNK_ADDRESSES),
            }),
            granularity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Changes are recorded in steps that cannot panic: a poisoned state
        // is still valid.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn counted<T>(
        &self,
        call: impl FnOnce(&mut State) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        let mut state = self.lock();
        let result = call(&mut state);
        state.table.counted(result)
    }
}

impl VirtualMemory for SimulatedVirtualMemory {
    fn backend(&self) -> &'static str {
        BACKEND
    }
    fn granularity(&self) -> u64 {
        self.granularity
    }
    fn holds_memory(&self) -> bool {
        false
    }
    fn reserve_range(&self, bytes: u64) -> Result<VaRange, StorageError> {
        self.counted(|s| {
            s.table.granular("bytes", bytes)?;
            if bytes > MAX_RANGE {
                return Err(StorageError::TooBig {
                    backend: BACKEND,
                    refused_by: crate::Refuser::Device,
                    requested: bytes,
                    max: MAX_RANGE,
                });
            }
            let no_room = StorageError::NoAddressSpace {
                backend: BACKEND,
                requested: bytes,
            };
            let base = s.space.claim(bytes).ok_or(no_room)?;
            Ok(s.table.add_range(base, bytes))
        })
    }
    fn free_range(&self, range: RangeId) -> Result<(), StorageError> {
        self.counted(|s| {
            let r = s.table.check_free(range)?;
            s.space.release(r.base.0, r.len);
            s.table.remove_range(range);
            Ok(())
        })
    }
    fn range_info(&self, range: RangeId) -> Result<VaRange, StorageError> {
        self.lock().table.range_info(range)
    }
    fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
        self.counted(|s| {
            let claim = s.table.check_create(bytes)?;
            s.table.add_chunk(claim, 0)
        })
    }
    fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError> {
        self.counted(|s| {
            s.table.check_release(chunk)?;
            s.table.remove_chunk(chunk);
            Ok(())
        })
    }
    fn chunk_bytes(&self, chunk: ChunkId) -> Result<u64, StorageError> {
        self.lock().table.chunk(chunk).map(|c| c.bytes)
    }
    fn map(&self, range: RangeId, offset: u64, chunk: ChunkId) -> Result<DevicePtr, StorageError> {
        self.counted(|s| {
            let m = s.table.check_map(range, offset, chunk)?;
            s.table.commit_map(range, m);
            Ok(DevicePtr(m.addr))
        })
    }
    fn unmap(&self, range: RangeId, offset: u64, bytes: u64) -> Result<Vec<ChunkId>, StorageError> {
        self.counted(|s| {
            let plan = s.table.check_unmap(range, offset, bytes)?;
            Ok(s.table.commit_unmap(&plan, plan.count))
        })
    }
    fn physical_info(&self) -> Result<MemInfo, StorageError> {
        Ok(self.lock().table.mem_info())
    }
    fn vm_stats(&self) -> VirtualMemoryStats {
        self.lock().table.stats
    }
    fn write_mapped(&self, _dst: DevicePtr, _data: &[u8]) -> Result<(), StorageError> {
        Err(StorageError::Unsupported {
            operation: "write_mapped",
            backend: BACKEND,
        })
    }
    fn read_mapped(&self, _src: DevicePtr, _out: &mut [u8]) -> Result<(), StorageError> {
        Err(StorageError::Unsupported {
            operation: "read_mapped",
            backend: BACKEND,
        })
    }
    fn fill_mapped(&self, dst: DevicePtr, _value: u8, bytes: u64) -> Result<(), StorageError> {
        self.lock().table.check_access(dst.0, bytes).map(drop)
    }
    fn copy_mapped(&self, src: DevicePtr, dst: DevicePtr, bytes: u64) -> Result<(), StorageError> {
        let state = self.lock();
        state.table.check_access(src.0, bytes)?;
        state.table.check_access(dst.0, bytes).map(drop)
    }
}
