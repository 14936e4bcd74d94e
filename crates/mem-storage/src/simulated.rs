//! `SimulatedResource`: a device of any stated size that holds no memory.
//!
//! RMM's `simulated_memory_resource` idea: hand out aligned, made-up
//! addresses and account for their bytes, so a workload of 80 GiB replays on
//! a 24 GiB host in milliseconds and a pool layout can be measured for a
//! device this machine does not have. Unlike RMM's (a bump pointer that
//! ignores frees), frees are checked and give their bytes back, so the
//! simulated device refuses exactly when a real one of that size would run
//! out of room (ignoring the driver's own rounding).
//!
//! Addresses come from a next-fit cursor over a 2^63-byte address space.
//! The cursor only moves forward, so an allocation costs one ordered-map
//! lookup (O(log live)); it wraps to the start only after 2^63 bytes were
//! handed out, and then skips past live allocations. No bytes exist:
//! `write` and `read` are [`StorageError::Unsupported`]; `fill` and `copy`
//! check their ranges and succeed without doing anything.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};
use crate::resource::{DeviceResource, MemInfo};

const BACKEND: &str = "sim";

/// First simulated address: non-zero and far from anything real, so a
/// simulated address used as a host pointer by mistake faults at once.
const ADDRESS_BASE: u64 = 1 << 44;
/// One past the last simulated address.
const ADDRESS_END: u64 = 1 << 63;

#[derive(Debug, Default)]
struct State {
    /// Live allocations: base address → bytes requested.
    live: BTreeMap<u64, u64>,
    /// Σ requested bytes of live allocations.
    used: u64,
    /// Next address to try.
    cursor: u64,
}

/// A device of a stated size that hands out addresses and holds no memory.
#[derive(Debug)]
pub struct SimulatedResource {
    state: Mutex<State>,
    capacity: u64,
    alignment: u64,
}

impl SimulatedResource {
    /// A simulated device of `capacity` bytes with CUDA's 256-byte alignment.
    pub fn new(capacity: u64) -> Self {
        Self {
            state: Mutex::new(State {
                cursor: ADDRESS_BASE,
                ..State::default()
            }),
            capacity: capacity.min(Self::max_capacity()),
            alignment: crate::HOST_ALIGNMENT,
        }
    }

    /// A simulated device of `capacity` bytes whose addresses are aligned to
    /// `alignment` bytes.
    ///
    /// # Errors
    /// [`StorageError::InvalidArgument`] unless `alignment` is a power of two
    /// no larger than 2^32, or when `capacity` exceeds the simulated address
    /// space ([`SimulatedResource::max_capacity`]).
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
        let mut sim = Self::new(capacity);
        sim.alignment = alignment;
        Ok(sim)
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
        self.lock().live.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Every mutation pairs a map change with its counter under the lock
        // and cannot panic in between, so a poisoned lock holds a valid state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Address span an allocation of `bytes` occupies: at least one byte so
    /// every address is unique, rounded up to the alignment.
    fn span(&self, bytes: u64) -> u64 {
        // `bytes ≤ capacity ≤ 2^62`, so rounding cannot overflow.
        bytes.max(1).div_ceil(self.alignment) * self.alignment
    }

    /// Check that `ptr..ptr+len` lies inside one live allocation.
    fn check_range(state: &State, ptr: DevicePtr, len: u64) -> Result<(), StorageError> {
        let unknown = || StorageError::UnknownPointer {
            backend: BACKEND,
            ptr: ptr.0,
            bytes: len,
        };
        let (&base, &bytes) = state.live.range(..=ptr.0).next_back().ok_or_else(unknown)?;
        match (ptr.0 - base).checked_add(len) {
            Some(end) if end <= bytes => Ok(()),
            _ => Err(unknown()),
        }
    }
}

impl SimulatedResource {
    /// Next-fit search for `span` free addresses from the cursor, wrapping
    /// to the start of the address space once. Every base and span is a
    /// multiple of the alignment, so every position tried is aligned.
    fn find_room(&self, state: &State, span: u64) -> Option<u64> {
        let mut at = state.cursor;
        let mut wrapped = false;
        loop {
            // `span ≤ 2^62 + 2^32 < ADDRESS_END`, so the subtraction is exact.
            if at > ADDRESS_END - span {
                if wrapped {
                    return None;
                }
                wrapped = true;
                at = ADDRESS_BASE;
                continue;
            }
            // Allocations never overlap, so only the last one starting
            // before `at` can reach past it, and only the first one at or
            // after `at` can start inside the span. `at` grows every turn.
            if let Some((&base, &bytes)) = state.live.range(..at).next_back() {
                let end = base + self.span(bytes);
                if end > at {
                    at = end;
                    continue;
                }
            }
            match state.live.range(at..).next() {
                Some((&base, &bytes)) if base < at + span => at = base + self.span(bytes),
                _ => return Some(at),
            }
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
                requested: bytes,
                max: self.capacity,
            });
        }
        let span = self.span(bytes);
        let mut state = self.lock();
        let free = self.capacity - state.used;
        if bytes > free {
            return Err(StorageError::OutOfMemory {
                backend: BACKEND,
                requested: bytes,
                free,
                total: self.capacity,
            });
        }
        let Some(addr) = self.find_room(&state, span) else {
            // Only reachable after 2^63 bytes of traffic with live
            // allocations scattered over the whole space: fragmentation,
            // which giving memory back cures, so out-of-memory is the truth.
            return Err(StorageError::OutOfMemory {
                backend: BACKEND,
                requested: bytes,
                free,
                total: self.capacity,
            });
        };
        state.live.insert(addr, bytes);
        state.used += bytes;
        state.cursor = addr + span;
        Ok(DevicePtr(addr))
    }

    fn deallocate(
        &self,
        ptr: DevicePtr,
        bytes: u64,
        _stream: StreamId,
    ) -> Result<(), StorageError> {
        let mut state = self.lock();
        if state.live.get(&ptr.0) != Some(&bytes) {
            return Err(StorageError::UnknownPointer {
                backend: BACKEND,
                ptr: ptr.0,
                bytes,
            });
        }
        state.live.remove(&ptr.0);
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
        _s: StreamId,
    ) -> Result<(), StorageError> {
        Self::check_range(&self.lock(), dst, bytes)
    }

    fn copy(
        &self,
        src: DevicePtr,
        dst: DevicePtr,
        bytes: u64,
        _s: StreamId,
    ) -> Result<(), StorageError> {
        let state = self.lock();
        Self::check_range(&state, src, bytes)?;
        Self::check_range(&state, dst, bytes)
    }
}
