//! Allocations that free themselves through their owner on drop.
//!
//! Both the typed [`TrackedSlice`] and the raw [`RuntimeAllocBlock`] hold an
//! `Allocation`: the address, the bytes charged, the manager account that
//! was charged, and the route the memory came from — the device's resource
//! directly (a manager with no runtime) or the runtime's stack. Dropping it
//! frees along the same route and settles both budgets: the global one in the
//! stack's [`GlobalDeviceBudget`](crate::GlobalDeviceBudget), the local one in
//! the account. A free that fails leaves the bytes charged and is counted.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use mem_storage::{DevicePtr, DeviceResource, StorageError, StreamId};

use crate::account::Account;
use crate::manager::element::{AllocTag, DeviceElement, as_bytes, as_bytes_mut};
use crate::runtime::DeviceRuntime;

/// Where an allocation's memory came from, and so where it goes back.
pub(crate) enum Route {
    /// Straight from the device's backend resource (no runtime attached).
    Device(Arc<dyn DeviceResource>),
    /// Through a runtime's resource stack.
    Runtime(Arc<DeviceRuntime>),
}

pub(crate) struct Allocation {
    pub(crate) ptr: DevicePtr,
    pub(crate) bytes: u64,
    pub(crate) route: Route,
    pub(crate) account: Arc<Account>,
}

impl Allocation {
    fn resource(&self) -> &dyn DeviceResource {
        match &self.route {
            Route::Device(resource) => resource.as_ref(),
            Route::Runtime(runtime) => runtime.resource().as_ref(),
        }
    }

    fn stream(&self) -> StreamId {
        match &self.route {
            Route::Device(_) => StreamId::DEFAULT,
            Route::Runtime(runtime) => runtime.stream(),
        }
    }

    fn write(&self, data: &[u8]) -> Result<(), StorageError> {
        self.resource().write(self.ptr, data, self.stream())
    }

    fn read(&self, out: &mut [u8]) -> Result<(), StorageError> {
        self.resource().read(self.ptr, out, self.stream())
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        match &self.route {
            Route::Runtime(runtime) => {
                runtime.release(self.ptr, self.bytes, Some(Arc::clone(&self.account)))
            }
            Route::Device(resource) => {
                match resource.deallocate(self.ptr, self.bytes, StreamId::DEFAULT) {
                    Ok(()) => self.account.release(self.bytes),
                    Err(error) => {
                        // No runtime to retry through: the bytes stay charged.
                        tracing::error!(ptr = self.ptr.0, bytes = self.bytes, %error,
                            "device free failed; bytes stay charged");
                        self.account.record_free_failure(self.bytes, true);
                    }
                }
            }
        }
    }
}

/// A typed device allocation, charged to its manager until dropped.
///
/// The xlog-compatible `GpuMemoryManager` API calls this `TrackedCudaSlice`. It owns its memory: dropping
/// it frees through the route it was allocated on and updates the manager's
/// budget and the device budget.
#[doc(alias = "TrackedCudaSlice")]
pub struct TrackedSlice<T: DeviceElement> {
    alloc: Allocation,
    len: usize,
    _element: PhantomData<T>,
}

impl<T: DeviceElement> fmt::Debug for TrackedSlice<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrackedSlice")
            .field("ptr", &self.alloc.ptr)
            .field("len", &self.len)
            .field("bytes", &self.alloc.bytes)
            .finish()
    }
}

impl<T: DeviceElement> TrackedSlice<T> {
    pub(crate) fn new(alloc: Allocation, len: usize) -> Self {
        Self {
            alloc,
            len,
            _element: PhantomData,
        }
    }

    /// Device address of the first element.
    pub fn ptr(&self) -> DevicePtr {
        self.alloc.ptr
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the slice holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes charged for this slice.
    pub fn bytes(&self) -> u64 {
        self.alloc.bytes
    }

    /// Copy `data` to the start of the slice (at most `len` elements).
    ///
    /// # Errors
    /// [`StorageError::UnknownPointer`] for more
    /// elements than the slice holds; `Unsupported` on a backend with no bytes.
    pub fn write(&self, data: &[T]) -> Result<(), StorageError> {
        self.check_len(data.len())?;
        self.alloc.write(as_bytes(data))
    }

    /// Copy the first `out.len()` elements into `out`.
    pub fn read(&self, out: &mut [T]) -> Result<(), StorageError> {
        self.check_len(out.len())?;
        self.alloc.read(as_bytes_mut(out))
    }

    fn check_len(&self, n: usize) -> Result<(), StorageError> {
        if n > self.len {
            return Err(StorageError::UnknownPointer {
                backend: self.alloc.resource().backend(),
                ptr: self.alloc.ptr.0,
                bytes: (n as u64).saturating_mul(std::mem::size_of::<T>() as u64),
            });
        }
        Ok(())
    }
}

/// Raw bytes allocated through a runtime ([`GpuMemoryManager::alloc_raw`](crate::GpuMemoryManager::alloc_raw)).
pub struct RuntimeAllocBlock {
    alloc: Allocation,
    tag: AllocTag,
}

impl fmt::Debug for RuntimeAllocBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeAllocBlock")
            .field("ptr", &self.alloc.ptr)
            .field("bytes", &self.alloc.bytes)
            .field("tag", &self.tag)
            .finish()
    }
}

impl RuntimeAllocBlock {
    pub(crate) fn new(alloc: Allocation, tag: AllocTag) -> Self {
        Self { alloc, tag }
    }

    /// Device address of the first byte.
    pub fn ptr(&self) -> DevicePtr {
        self.alloc.ptr
    }

    /// Bytes allocated.
    pub fn bytes(&self) -> u64 {
        self.alloc.bytes
    }

    /// What the block is for.
    pub fn tag(&self) -> AllocTag {
        self.tag
    }

    /// Copy `data` to the start of the block.
    pub fn write(&self, data: &[u8]) -> Result<(), StorageError> {
        self.alloc.write(data)
    }

    /// Copy the first `out.len()` bytes of the block into `out`.
    pub fn read(&self, out: &mut [u8]) -> Result<(), StorageError> {
        self.alloc.read(out)
    }
}
