//! `SimulatedResource`: a device of any stated size that holds no memory.
//!
//! RMM's `simulated_memory_resource` idea: hand out aligned, made-up
//! addresses and account for their bytes, so a workload of 80 GiB replays on
//! a 24 GiB host in milliseconds and a pool layout can be measured for a
//! device this machine does not have. Unlike RMM's (a bump pointer that
//! ignores frees), frees are checked and give their bytes back, so the
//! simulated device refuses exactly when a real one of that size would run
//! out of room (it counts requested bytes, not the driver's rounding).
//!
//! Its bytes are counted on a [`PhysicalMemory`] that the device's virtual
//! memory shares ([`SimulatedResource::virtual_memory`]): pages and arena
//! chunks draw from one capacity, as `cuMemAlloc` and `cuMemCreate` do on a
//! GPU, so neither can hold what the other already holds.
//!
//! Cost per call: one lock, one compare-and-swap and O(log live) map work (see
//! [`address_space`]); nothing is zeroed or touched. No bytes exist:
//! `write` and `read` are [`StorageError::Unsupported`]; `fill` and `copy`
//! check their ranges and succeed without doing anything.

use std::sync::{Arc, Mutex};

use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};
use crate::physical::PhysicalMemory;
use crate::resource::{DeviceResource, MemInfo};
use crate::simulated::address_space::{AddressSpace, PAGE_ADDRESSES};

pub(crate) mod address_space;
mod virtual_memory;

pub use virtual_memory::SimulatedVirtualMemory;

const BACKEND: &str = "sim";

/// A device of a stated size that hands out addresses and holds no memory.
#[derive(Debug)]
pub struct SimulatedResource {
    /// Live allocations (Σ of their requested bytes is claimed on `memory`).
    space: Mutex<AddressSpace>,
    memory: Arc<PhysicalMemory>,
    alignment: u64,
}

impl SimulatedResource {
    /// A simulated device of `capacity` bytes (at most
    /// [`SimulatedResource::max_capacity`]; more is clamped) with CUDA's
    /// 256-byte alignment.
    pub fn new(capacity: u64) -> Self {
        Self::build(capacity.min(Self::max_capacity()), crate::HOST_ALIGNMENT)
    }

    /// A simulated device of `capacity` bytes whose addresses are aligned to
    /// `alignment` bytes.
    ///
    /// # Errors
    /// [`StorageError::InvalidArgument`] unless `alignment` is a power of two
    /// no larger than 2^32 and `capacity` is at most
    /// [`SimulatedResource::max_capacity`].
    pub fn with_alignment(capacity: u64, alignment: u64) -> Result<Self, StorageError> {
        if !alignment.is_power_of_two() || alignment > (1 << 32) {
            return Err(StorageError::InvalidArgument {
                parameter: "alignment",
                value: alignment,
                expected: "a power of two between 1 and 2^32",
            });
        }
        if capacity > Self::max_capacity() {
            return Err(StorageError::InvalidArgument {
                parameter: "capacity",
                value: capacity,
                expected: "at most 2^62 bytes (half the simulated address space)",
            });
        }
        Ok(Self::build(capacity, alignment))
    }

    fn build(capacity: u64, alignment: u64) -> Self {
        Self {
            space: Mutex::new(AddressSpace::new(alignment, PAGE_ADDRESSES)),
            memory: PhysicalMemory::new(capacity),
            alignment,
        }
    }

    /// The largest capacity a simulated device can state: half its address
    /// space, so alignment padding can never exhaust the addresses first.
    pub const fn max_capacity() -> u64 {
        1 << 62
    }

    /// The stated size of the device.
    pub fn capacity(&self) -> u64 {
        self.memory.total()
    }

    /// The device's physical memory, which its pages draw on: give it to
    /// [`SimulatedVirtualMemory::sharing`] for chunks that share the size.
    pub fn physical_memory(&self) -> &Arc<PhysicalMemory> {
        &self.memory
    }

    /// Virtual memory of this device (2 MiB granularity) whose chunks draw
    /// on the same physical memory as its pages: together they hold at most
    /// [`SimulatedResource::capacity`] bytes.
    pub fn virtual_memory(&self) -> SimulatedVirtualMemory {
        SimulatedVirtualMemory::build(self.memory.clone(), crate::vm::DEFAULT_GRANULARITY)
    }

    /// Number of live allocations.
    pub fn live_allocations(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, AddressSpace> {
        // Every mutation is one map change that cannot panic half-way, so a
        // poisoned lock holds a valid state.
        self.space.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn check_range(&self, ptr: DevicePtr, len: u64) -> Result<(), StorageError> {
        if self.lock().contains(ptr.0, len) {
            Ok(())
        } else {
            Err(StorageError::UnknownPointer {
                backend: BACKEND,
                ptr: ptr.0,
                bytes: len,
            })
        }
    }
}

impl DeviceResource for SimulatedResource {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn allocate(&self, bytes: u64, _stream: StreamId) -> Result<DevicePtr, StorageError> {
        // TooBig past the whole device, OutOfMemory past what pages and
        // chunks leave free.
        self.memory.claim(BACKEND, bytes)?;
        // No room is only possible after 2^63 bytes of traffic left live
        // allocations scattered over the whole space: fragmentation, which
        // giving memory back cures, so out-of-memory is the truth.
        let Some(addr) = self.lock().claim(bytes) else {
            self.memory.release(bytes);
            let info = self.memory.mem_info();
            return Err(StorageError::OutOfMemory {
                backend: BACKEND,
                refused_by: crate::Refuser::Device,
                requested: bytes,
                free: info.free,
                total: info.total,
            });
        };
        Ok(DevicePtr(addr))
    }

    fn deallocate(
        &self,
        ptr: DevicePtr,
        bytes: u64,
        _stream: StreamId,
    ) -> Result<(), StorageError> {
        if !self.lock().release(ptr.0, bytes) {
            return Err(StorageError::UnknownPointer {
                backend: BACKEND,
                ptr: ptr.0,
                bytes,
            });
        }
        self.memory.release(bytes);
        Ok(())
    }

    fn alignment(&self) -> u64 {
        self.alignment
    }

    fn mem_info(&self) -> Result<MemInfo, StorageError> {
        Ok(self.memory.mem_info())
    }

    fn holds_memory(&self) -> bool {
        false
    }

    fn fill(
        &self,
        dst: DevicePtr,
        _value: u8,
        bytes: u64,
        _stream: StreamId,
    ) -> Result<(), StorageError> {
        self.check_range(dst, bytes)
    }

    fn copy(
        &self,
        src: DevicePtr,
        dst: DevicePtr,
        bytes: u64,
        _stream: StreamId,
    ) -> Result<(), StorageError> {
        self.check_range(src, bytes)?;
        self.check_range(dst, bytes)
    }
}
