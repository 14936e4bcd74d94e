//! `HostResource`: real, aligned host memory standing in for a device.
//!
//! It is the embedded default backend and the one every test uses to check
//! that contents survive relocation and capture: bytes written through
//! [`DeviceResource::write`] read back through [`DeviceResource::read`].
//!
//! Why every byte access goes through the resource (and a mutex) instead of
//! handing out `&mut [u8]`: device memory is shared by many holders that
//! Rust's borrow rules cannot see, exactly like GPU memory. Checking each
//! access against the live allocations under one lock makes a stale or
//! out-of-range access an error instead of undefined behaviour, and keeps the
//! host paths clean under miri. Allocations are zeroed so no read observes
//! uninitialised memory.
//!
//! Its bytes are counted on a [`PhysicalMemory`] that the device's virtual
//! memory shares ([`HostResource::virtual_memory`]): pages and arena chunks
//! draw from one capacity, as `cuMemAlloc` and `cuMemCreate` do on a GPU.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};
use crate::physical::PhysicalMemory;
use crate::resource::{DeviceResource, MemInfo};

#[cfg(test)]
mod refusal_tests;
mod transfer;
#[cfg(target_os = "linux")]
pub(crate) mod virtual_memory;
#[cfg(not(target_os = "linux"))]
#[path = "vm_unsupported.rs"]
pub(crate) mod virtual_memory;
#[cfg(target_os = "linux")]
mod vm_bytes;
#[cfg(target_os = "linux")]
mod vm_ops;
#[cfg(target_os = "linux")]
mod vm_share;
#[cfg(target_os = "linux")]
pub(crate) mod vm_sys;

pub use virtual_memory::HostVirtualMemory;

pub(crate) const BACKEND: &str = "host";

/// Default alignment of host allocations: CUDA's `cudaMalloc` guarantees 256.
pub const HOST_ALIGNMENT: u64 = 256;

/// One live host allocation.
#[derive(Debug)]
pub(crate) struct Block {
    pub(crate) base: NonNull<u8>,
    layout: Layout,
    /// Bytes requested (≤ `layout.size()`).
    pub(crate) bytes: u64,
}

// SAFETY: a `Block` is the unique owner of its allocation; the memory is only
// touched while the resource's mutex is held, so moving or sharing the owner
// across threads cannot race.
unsafe impl Send for Block {}

#[derive(Debug, Default)]
pub(crate) struct State {
    /// Live blocks keyed by base address (Σ of their requested bytes is
    /// claimed on the resource's [`PhysicalMemory`]).
    pub(crate) blocks: BTreeMap<u64, Block>,
}

/// Real host memory with a stated capacity, behaving like a device.
#[derive(Debug)]
pub struct HostResource {
    state: Mutex<State>,
    memory: Arc<PhysicalMemory>,
    alignment: u64,
}

impl Default for HostResource {
    fn default() -> Self {
        Self::new()
    }
}

impl HostResource {
    /// A host device as large as this machine's physical memory (16 GiB when
    /// that cannot be read). Memory is committed lazily by the OS, so the
    /// capacity is a limit, not a cost.
    pub fn new() -> Self {
        Self::with_capacity(physical_memory().unwrap_or(16 << 30))
    }

    /// A host device that refuses to hold more than `capacity` bytes at once.
    pub fn with_capacity(capacity: u64) -> Self {
        Self {
            state: Mutex::new(State::default()),
            memory: PhysicalMemory::new(capacity),
            alignment: HOST_ALIGNMENT,
        }
    }

    /// The device's physical memory, which its pages draw on: give it to
    /// [`HostVirtualMemory::sharing`] for chunks that share the capacity.
    pub fn physical_memory(&self) -> &Arc<PhysicalMemory> {
        &self.memory
    }

    /// Virtual memory of this device (2 MiB granularity) whose chunks draw
    /// on the same physical memory as its pages: together they hold at most
    /// the resource's capacity.
    ///
    /// # Errors
    /// As [`HostVirtualMemory::sharing`]: no memfd, or not Linux.
    pub fn virtual_memory(&self) -> Result<HostVirtualMemory, StorageError> {
        HostVirtualMemory::sharing(self.memory.clone(), crate::vm::DEFAULT_GRANULARITY)
    }

    /// Number of live allocations.
    pub fn live_allocations(&self) -> usize {
        self.lock().blocks.len()
    }

    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave `State` inconsistent:
        // every mutation is a single insert/remove paired with its counter.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Largest single request: what `Layout` accepts after rounding.
    fn max_request(&self) -> u64 {
        (isize::MAX as u64) - (self.alignment - 1)
    }

    /// Allocate `bytes` already claimed on the physical memory (the caller
    /// gives the claim back if this fails).
    fn allocate_claimed(&self, bytes: u64) -> Result<DevicePtr, StorageError> {
        // A zero-byte request still gets a unique, aligned address.
        let size = bytes.max(1);
        let layout =
            Layout::from_size_align(size as usize, self.alignment as usize).map_err(|_| {
                StorageError::TooBig {
                    backend: BACKEND,
                    refused_by: crate::Refuser::Device,
                    requested: bytes,
                    max: self.max_request(),
                }
            })?;
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let Some(base) = NonNull::new(raw) else {
            // The machine ran out before the device did: still a full
            // device to the caller. `free` excludes this request's claim.
            let info = self.memory.mem_info();
            return Err(StorageError::OutOfMemory {
                backend: BACKEND,
                refused_by: crate::Refuser::Device,
                requested: bytes,
                free: info.free.saturating_add(bytes),
                total: info.total,
            });
        };
        let addr = base.as_ptr() as usize as u64;
        let block = Block {
            base,
            layout,
            bytes,
        };
        self.lock().blocks.insert(addr, block);
        Ok(DevicePtr(addr))
    }
}

impl Drop for HostResource {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for (_, block) in std::mem::take(&mut state.blocks) {
            // SAFETY: `block.base` was returned by `alloc_zeroed(block.layout)`
            // and is removed from the map here, so it is freed exactly once.
            unsafe { dealloc(block.base.as_ptr(), block.layout) };
        }
    }
}

impl DeviceResource for HostResource {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    fn allocate(&self, bytes: u64, _stream: StreamId) -> Result<DevicePtr, StorageError> {
        let capacity = self.memory.total();
        if bytes > self.max_request() {
            return Err(StorageError::TooBig {
                backend: BACKEND,
                refused_by: crate::Refuser::Device,
                requested: bytes,
                max: self.max_request().min(capacity),
            });
        }
        // TooBig past the whole device, OutOfMemory past what pages and
        // chunks leave free; given back below if the allocation fails.
        self.memory.claim(BACKEND, bytes)?;
        match self.allocate_claimed(bytes) {
            Ok(ptr) => Ok(ptr),
            Err(error) => {
                self.memory.release(bytes);
                Err(error)
            }
        }
    }

    fn deallocate(
        &self,
        ptr: DevicePtr,
        bytes: u64,
        _stream: StreamId,
    ) -> Result<(), StorageError> {
        let mut state = self.lock();
        match state.blocks.get(&ptr.0) {
            Some(block) if block.bytes == bytes => {}
            _ => {
                return Err(StorageError::UnknownPointer {
                    backend: BACKEND,
                    ptr: ptr.0,
                    bytes,
                });
            }
        }
        let block = state.blocks.remove(&ptr.0).expect("checked above");
        drop(state);
        self.memory.release(block.bytes);
        // SAFETY: `block` came from `alloc_zeroed(block.layout)` and was just
        // removed from the map, so no other access can reach it and it is freed once.
        unsafe { dealloc(block.base.as_ptr(), block.layout) };
        Ok(())
    }

    fn alignment(&self) -> u64 {
        self.alignment
    }

    fn mem_info(&self) -> Result<MemInfo, StorageError> {
        Ok(self.memory.mem_info())
    }

    fn write(&self, dst: DevicePtr, data: &[u8], _stream: StreamId) -> Result<(), StorageError> {
        self.write_bytes(dst, data)
    }

    fn read(&self, src: DevicePtr, out: &mut [u8], _stream: StreamId) -> Result<(), StorageError> {
        self.read_bytes(src, out)
    }

    fn fill(
        &self,
        dst: DevicePtr,
        value: u8,
        bytes: u64,
        _stream: StreamId,
    ) -> Result<(), StorageError> {
        self.fill_bytes(dst, value, bytes)
    }

    fn copy(
        &self,
        src: DevicePtr,
        dst: DevicePtr,
        bytes: u64,
        _stream: StreamId,
    ) -> Result<(), StorageError> {
        self.copy_bytes(src, dst, bytes)
    }
}

/// Physical memory of this machine from `/proc/meminfo`, if readable.
pub(crate) fn physical_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}
