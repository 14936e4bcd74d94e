//! `StatsResource`: current, peak and total bytes and counts, lock-free.
//!
//! RMM's `statistics_resource_adaptor`. Counters are atomics so reading
//! them never blocks an allocation on another thread: a monitoring thread
//! can poll [`StatsResource::stats`] while streams allocate. A snapshot
//! reads each counter separately, so under concurrent traffic its fields
//! may come from slightly different instants; each one is exact by itself.
//! Only successful calls move the byte and count figures; refusals are
//! counted apart, so an out-of-memory storm is visible. Over a
//! [`crate::VirtualMemory`] it also counts ranges, chunks and mappings
//! ([`StatsResource::virtual_stats`], in `vm/stats.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};
use crate::resource::DeviceResource;

pub(crate) mod virtual_memory;

/// A snapshot of [`StatsResource`]'s counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResourceStats {
    /// Bytes allocated and not yet freed.
    pub current_bytes: u64,
    /// Highest `current_bytes` since creation or the last
    /// [`StatsResource::reset_peaks`].
    pub peak_bytes: u64,
    /// Bytes of every successful allocation, ever.
    pub total_bytes: u64,
    /// Allocations not yet freed.
    pub current_count: u64,
    /// Highest `current_count` since creation or the last reset.
    pub peak_count: u64,
    /// Successful allocations, ever.
    pub total_count: u64,
    /// Allocations the inner resource refused.
    pub failed_allocations: u64,
    /// Frees the inner resource refused (their bytes stay counted).
    pub failed_frees: u64,
}

/// A resource that counts what is allocated through it.
#[derive(Debug)]
pub struct StatsResource<R> {
    inner: R,
    current_bytes: AtomicU64,
    peak_bytes: AtomicU64,
    total_bytes: AtomicU64,
    current_count: AtomicU64,
    peak_count: AtomicU64,
    total_count: AtomicU64,
    failed_allocations: AtomicU64,
    failed_frees: AtomicU64,
    /// Virtual-memory counters, when the inner resource has virtual memory.
    pub(crate) vm: crate::adaptors::stats::virtual_memory::VmCounters,
}

impl<R> StatsResource<R> {
    /// Count every allocate and free made through `inner`.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            current_bytes: AtomicU64::new(0),
            peak_bytes: AtomicU64::new(0),
            total_bytes: AtomicU64::new(0),
            current_count: AtomicU64::new(0),
            peak_count: AtomicU64::new(0),
            total_count: AtomicU64::new(0),
            failed_allocations: AtomicU64::new(0),
            failed_frees: AtomicU64::new(0),
            vm: Default::default(),
        }
    }

    /// The wrapped resource.
    pub fn inner(&self) -> &R {
        &self.inner
    }

    /// The counters now.
    pub fn stats(&self) -> ResourceStats {
        ResourceStats {
            current_bytes: self.current_bytes.load(Ordering::Relaxed),
            peak_bytes: self.peak_bytes.load(Ordering::Relaxed),
            total_bytes: self.total_bytes.load(Ordering::Relaxed),
            current_count: self.current_count.load(Ordering::Relaxed),
            peak_count: self.peak_count.load(Ordering::Relaxed),
            total_count: self.total_count.load(Ordering::Relaxed),
            failed_allocations: self.failed_allocations.load(Ordering::Relaxed),
            failed_frees: self.failed_frees.load(Ordering::Relaxed),
        }
    }

    /// Number of successful allocations so far (the figure tests compare
    /// across a window that must not allocate).
    pub fn allocation_count(&self) -> u64 {
        self.total_count.load(Ordering::Relaxed)
    }

    /// Lower the peaks to the current level (not to zero: what is held now
    /// is the floor of any later peak), to measure one phase of a workload.
    pub fn reset_peaks(&self) {
        self.peak_bytes.store(
            self.current_bytes.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        self.peak_count.store(
            self.current_count.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
    }
}

impl<R: DeviceResource> DeviceResource for StatsResource<R> {
    fn allocate(&self, bytes: u64, stream: StreamId) -> Result<DevicePtr, StorageError> {
        match self.inner.allocate(bytes, stream) {
            Ok(ptr) => {
                // `fetch_add` returns the old value; the new level feeds the peak.
                let now = self.current_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
                self.peak_bytes.fetch_max(now, Ordering::Relaxed);
                let count = self.current_count.fetch_add(1, Ordering::Relaxed) + 1;
                self.peak_count.fetch_max(count, Ordering::Relaxed);
                self.total_bytes.fetch_add(bytes, Ordering::Relaxed);
                self.total_count.fetch_add(1, Ordering::Relaxed);
                Ok(ptr)
            }
            Err(err) => {
                self.failed_allocations.fetch_add(1, Ordering::Relaxed);
                Err(err)
            }
        }
    }

    fn deallocate(&self, ptr: DevicePtr, bytes: u64, stream: StreamId) -> Result<(), StorageError> {
        match self.inner.deallocate(ptr, bytes, stream) {
            Ok(()) => {
                // Saturating: a free of memory allocated around this adaptor
                // (through a shared inner resource) must not wrap the counter.
                saturating_sub(&self.current_bytes, bytes);
                saturating_sub(&self.current_count, 1);
                Ok(())
            }
            Err(err) => {
                self.failed_frees.fetch_add(1, Ordering::Relaxed);
                Err(err)
            }
        }
    }

    crate::forward_device_resource!(inner);
}

fn saturating_sub(counter: &AtomicU64, amount: u64) {
    // The closure always returns `Some`, so the update cannot fail.
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some(v.saturating_sub(amount))
    });
}
