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
//! Cost per call: one lock and O(log live) map work (see
//! [`crate::address_space`]); nothing is zeroed or touched. No bytes exist:
//! `write` and `read` are [`StorageError::Unsupported`]; `fill` and `copy`
//! check their ranges and succeed without doing anything.

use std::sync::Mutex;

use crate::address_space::AddressSpace;
use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};
use crate::resource::{DeviceResource, MemInfo};

const BACKEND: &str = "sim";

#[derive(Debug)]
struct State {
    space: AddressSpace,
    /// Σ requested bytes of live allocations.
    used: u64,
}

/// A device of a stated size that hands out addresses and holds no memory.
#[derive(Debug)]
pub struct SimulatedResource {
    state: Mutex<State>,
    capacity: u64,
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
            state: Mutex::new(State {
                space: AddressSpace::new(alignment),
                used: 0,
            }),
            capacity,
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
        self.capacity
    }

    /// Number of live allocations.
    pub fn live_allocations(&self) -> usize {
        self.lock().space.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Every mutation pairs a map change with its counter under the lock
        // and cannot panic in between, so a poisoned lock holds a valid state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn check_range(&self, ptr: DevicePtr, len: u64) -> Result<(), StorageError> {
        if self.lock().space.contains(ptr.0, len) {
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
        if bytes > self.capacity {
            return Err(StorageError::TooBig {
                backend: BACKEND,
                refused_by: crate::Refuser::Device,
                requested: bytes,
                max: self.capacity,
            });
        }
        let mut state = self.lock();
        let free = self.capacity - state.used;
        let out_of_memory = StorageError::OutOfMemory {
            backend: BACKEND,
            refused_by: crate::Refuser::Device,
            requested: bytes,
            free,
            total: self.capacity,
        };
        if bytes > free {
            return Err(out_of_memory);
        }
        // No room is only possible after 2^63 bytes of traffic left live
        // allocations scattered over the whole space: fragmentation, which
        // giving memory back cures, so out-of-memory is the truth.
        let addr = state.space.claim(bytes).ok_or(out_of_memory)?;
        state.used += bytes;
        Ok(DevicePtr(addr))
    }

    fn deallocate(
        &self,
        ptr: DevicePtr,
        bytes: u64,
        _stream: StreamId,
    ) -> Result<(), StorageError> {
        let mut state = self.lock();
        if !state.space.release(ptr.0, bytes) {
            return Err(StorageError::UnknownPointer {
                backend: BACKEND,
                ptr: ptr.0,
                bytes,
            });
        }
        state.used -= bytes;
        Ok(())
    }

    fn alignment(&self) -> u64 {
        self.alignment
    }

    fn mem_info(&self) -> Result<MemInfo, StorageError> {
        let used = self.lock().used;
        Ok(MemInfo {
            free: self.capacity - used,
            total: self.capacity,
        })
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
