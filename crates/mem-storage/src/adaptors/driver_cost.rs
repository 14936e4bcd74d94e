//! `DriverCostResource`: charge every call that passes through it the
//! driver call(s) a CUDA backend makes for it.
//!
//! An adaptor rather than a feature of the simulated backends: it wraps
//! any backend, so a host-memory run reports what a GPU would have paid
//! for the same calls, the simulated and host backends charge by one
//! rule, and over the CUDA backend (with [`DriverCosts::ZERO`](crate::DriverCosts::ZERO), its real
//! time being in the wall clock) it still counts calls and waits.
//!
//! What each call is charged (as `crates/mem-storage/src/cuda/` does it):
//!
//! | call | charged |
//! |---|---|
//! | `allocate` / `deallocate` | `cuMemAllocAsync` / `cuMemFreeAsync` ([`PageCalls::StreamOrdered`], the facade's CUDA default; the default pool's growth is priced where it grows, `DriverMeter::charge_alloc_async`), or `cuMemAlloc` / `cuMemFree` + a device synchronize ([`PageCalls::Sync`]) |
//! | `synchronize(stream)` | a stream synchronize (and the default pool's trim there) |
//! | `stream_wait` | an event record (and the stream's wait on it) |
//! | `reserve_range` / `free_range` | `cuMemAddressReserve` / `cuMemAddressFree` |
//! | `create_chunk` / `release_chunk` | `cuMemCreate` / `cuMemRelease`, by size |
//! | `map` | `cuMemMap` + `cuMemSetAccess`, by size |
//! | `unmap` of k chunks | k × `cuMemUnmap` (no wait: the caller proves the chunks' work is done) |
//!
//! Only successful calls are charged: a refusal is the table's, before
//! any driver call. Byte movement is forwarded uncharged.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::driver_cost::{DriverCall, DriverMeter};
use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};
use crate::resource::DeviceResource;
use crate::vm::{ChunkId, RangeId, VaRange, VirtualMemory, VirtualMemoryStats};

/// Which driver calls a `DeviceResource` allocation stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PageCalls {
    /// `cuMemAllocAsync` / `cuMemFreeAsync` (a device with memory pools).
    #[default]
    StreamOrdered,
    /// `cuMemAlloc` / `cuMemFree`, whose free waits for the device.
    Sync,
}

/// A resource or virtual memory whose calls are charged to a
/// [`DriverMeter`].
#[derive(Debug)]
pub struct DriverCostResource<R> {
    inner: R,
    meter: Arc<DriverMeter>,
    pages: PageCalls,
    peers: Arc<AtomicU64>,
}

impl<R> DriverCostResource<R> {
    /// Charge `inner`'s calls to `meter`, pages as stream-ordered calls.
    pub fn new(inner: R, meter: Arc<DriverMeter>) -> Self {
        DriverCostResource {
            inner,
            meter,
            pages: PageCalls::default(),
            peers: Arc::default(),
        }
    }

    /// Charge allocations as `pages` calls.
    pub fn with_page_calls(mut self, pages: PageCalls) -> Self {
        self.pages = pages;
        self
    }

    /// Price each map's access for the devices `peers` counts besides the
    /// owner (a grant adds one): a peer is one more descriptor in the
    /// map's `cuMemSetAccess`, charged as one more access call.
    pub fn with_peer_count(mut self, peers: Arc<AtomicU64>) -> Self {
        self.peers = peers;
        self
    }

    /// The wrapped resource.
    pub fn inner(&self) -> &R {
        &self.inner
    }

    /// The meter charged.
    pub fn meter(&self) -> &Arc<DriverMeter> {
        &self.meter
    }

    fn charged<T>(
        &self,
        result: Result<T, StorageError>,
        charge: impl FnOnce(&T),
    ) -> Result<T, StorageError> {
        if let Ok(value) = &result {
            charge(value);
        }
        result
    }
}

impl<R: DeviceResource> DeviceResource for DriverCostResource<R> {
    fn allocate(&self, bytes: u64, stream: StreamId) -> Result<DevicePtr, StorageError> {
        self.charged(self.inner.allocate(bytes, stream), |_| match self.pages {
            PageCalls::StreamOrdered => self.meter.charge_alloc_async(bytes),
            PageCalls::Sync => self.meter.charge(DriverCall::Alloc, bytes),
        })
    }

    fn deallocate(&self, ptr: DevicePtr, bytes: u64, stream: StreamId) -> Result<(), StorageError> {
        self.charged(self.inner.deallocate(ptr, bytes, stream), |()| {
            match self.pages {
                PageCalls::StreamOrdered => self.meter.charge_free_async(bytes),
                PageCalls::Sync => {
                    self.meter.charge_device_synchronize();
                    self.meter.charge(DriverCall::Free, bytes);
                }
            }
        })
    }

    fn synchronize(&self, stream: StreamId) -> Result<(), StorageError> {
        self.charged(self.inner.synchronize(stream), |()| {
            self.meter.charge_stream_synchronize()
        })
    }

    fn stream_wait(&self, waiter: StreamId, waited: StreamId) -> Result<(), StorageError> {
        self.charged(self.inner.stream_wait(waiter, waited), |()| {
            self.meter.charge(DriverCall::EventRecord, 0)
        })
    }

    crate::forward_device_resource!(inner: backend, alignment, mem_info, holds_memory, write, read, fill, copy);
}

impl<V: VirtualMemory> VirtualMemory for DriverCostResource<V> {
    fn reserve_range(&self, bytes: u64) -> Result<VaRange, StorageError> {
        self.charged(self.inner.reserve_range(bytes), |_| {
            self.meter.charge(DriverCall::AddressReserve, bytes)
        })
    }

    fn free_range(&self, range: RangeId) -> Result<(), StorageError> {
        self.charged(self.inner.free_range(range), |()| {
            self.meter.charge(DriverCall::AddressFree, 0)
        })
    }

    fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
        self.charged(self.inner.create_chunk(bytes), |_| {
            self.meter.charge(DriverCall::Create, bytes)
        })
    }

    fn create_shareable_chunk(
        &self,
        bytes: u64,
        handles: crate::ShareHandles,
    ) -> Result<(ChunkId, crate::ShareHandles), StorageError> {
        self.charged(self.inner.create_shareable_chunk(bytes, handles), |_| {
            self.meter.charge(DriverCall::Create, bytes)
        })
    }

    fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError> {
        // Sizes never change and ids are never reused: asked before, right
        // if the release succeeds.
        let bytes = self.inner.chunk_bytes(chunk).unwrap_or(0);
        self.charged(self.inner.release_chunk(chunk), |()| {
            self.meter.charge(DriverCall::Release, bytes)
        })
    }

    fn map(&self, range: RangeId, offset: u64, chunk: ChunkId) -> Result<DevicePtr, StorageError> {
        let bytes = self.inner.chunk_bytes(chunk).unwrap_or(0);
        self.charged(self.inner.map(range, offset, chunk), |_| {
            self.meter.charge(DriverCall::Map, bytes);
            let devices = 1 + self.peers.load(Ordering::Relaxed);
            self.meter.charge_many(
                DriverCall::SetAccess,
                devices,
                bytes.saturating_mul(devices),
            );
        })
    }

    fn unmap(&self, range: RangeId, offset: u64, bytes: u64) -> Result<Vec<ChunkId>, StorageError> {
        self.charged(self.inner.unmap(range, offset, bytes), |chunks| {
            self.meter
                .charge_many(DriverCall::Unmap, chunks.len() as u64, bytes);
        })
    }

    /// The backend's counters, with this device's modeled driver time.
    fn vm_stats(&self) -> VirtualMemoryStats {
        VirtualMemoryStats {
            driver: self.meter.snapshot(),
            ..self.inner.vm_stats()
        }
    }

    crate::forward_virtual_memory!(
        inner: backend, granularity, holds_memory, range_info, chunk_bytes, physical_info,
        write_mapped, read_mapped, fill_mapped, copy_mapped, share_granularity, export_chunk,
        import_chunk, release_imported
    );
}
