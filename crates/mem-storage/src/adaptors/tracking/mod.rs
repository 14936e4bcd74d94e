//! `TrackingResource`: which allocations are outstanding, and a leak report.
//!
//! RMM's `tracking_resource_adaptor`. Every successful allocation is kept in
//! a map until it is freed, with the order it was made in, its stream and
//! thread, and (optionally) a backtrace of where it was made. Tests end with
//! "nothing is outstanding"; a process ends with a leak report that says
//! what was never given back and from where. Capturing backtraces costs
//! microseconds per allocation, so it is off unless asked for. Over a
//! [`crate::VirtualMemory`] it follows ranges, chunks and their mappings
//! too ([`TrackingResource::virtual_leak_report`], in
//! `tracking/virtual_memory.rs`).

use std::backtrace::Backtrace;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::adaptors::logging::event_log::thread_number;
use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};
use crate::resource::DeviceResource;

pub(crate) mod virtual_memory;

pub use virtual_memory::{OutstandingChunk, OutstandingRange, VirtualLeakReport};

/// One allocation that has not been freed.
#[derive(Debug, Clone)]
pub struct Outstanding {
    /// Its address.
    pub ptr: DevicePtr,
    /// Bytes requested.
    pub bytes: u64,
    /// Stream it was allocated on.
    pub stream: StreamId,
    /// 1-based order among the allocations made through this adaptor.
    pub sequence: u64,
    /// Log number of the allocating thread (as in [`crate::ResourceEvent`]).
    pub thread: u64,
    /// Where it was allocated, when backtraces are on.
    pub backtrace: Option<Arc<Backtrace>>,
}

/// What is still held: the allocations, oldest first, and their total.
#[derive(Debug, Clone, Default)]
pub struct LeakReport {
    /// Outstanding allocations, in allocation order.
    pub allocations: Vec<Outstanding>,
    /// Σ bytes of `allocations`.
    pub bytes: u64,
}

impl LeakReport {
    /// Whether nothing is outstanding.
    pub fn is_empty(&self) -> bool {
        self.allocations.is_empty()
    }
}

impl fmt::Display for LeakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return writeln!(f, "no outstanding allocations");
        }
        writeln!(
            f,
            "{} outstanding allocations, {} bytes:",
            self.allocations.len(),
            self.bytes
        )?;
        for a in &self.allocations {
            writeln!(
                f,
                "  #{} {} ({} bytes) on stream {} by thread {}",
                a.sequence, a.ptr, a.bytes, a.stream.0, a.thread
            )?;
            if let Some(bt) = &a.backtrace {
                writeln!(f, "{bt}")?;
            }
        }
        Ok(())
    }
}

/// A resource that remembers every allocation until it is freed.
#[derive(Debug)]
pub struct TrackingResource<R> {
    inner: R,
    live: Mutex<HashMap<u64, Outstanding>>,
    pub(crate) sequence: AtomicU64,
    pub(crate) backtraces: bool,
    /// Ranges and chunks, when the inner resource has virtual memory.
    pub(crate) vm: Mutex<crate::adaptors::tracking::virtual_memory::VmLive>,
}

impl<R> TrackingResource<R> {
    /// Track allocations made through `inner`, without backtraces.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            live: Mutex::new(HashMap::new()),
            sequence: AtomicU64::new(0),
            backtraces: false,
            vm: Mutex::default(),
        }
    }

    /// Track allocations and capture a backtrace of each (shown in the
    /// leak report when `RUST_BACKTRACE` or `RUST_LIB_BACKTRACE` is set).
    pub fn with_backtraces(inner: R) -> Self {
        Self {
            backtraces: true,
            ..Self::new(inner)
        }
    }

    /// The wrapped resource.
    pub fn inner(&self) -> &R {
        &self.inner
    }

    /// Outstanding allocations, oldest first.
    pub fn outstanding(&self) -> Vec<Outstanding> {
        let mut all: Vec<_> = self.lock().values().cloned().collect();
        all.sort_by_key(|a| a.sequence);
        all
    }

    /// Number of outstanding allocations.
    pub fn outstanding_count(&self) -> usize {
        self.lock().len()
    }

    /// Σ bytes of outstanding allocations.
    pub fn outstanding_bytes(&self) -> u64 {
        self.lock().values().map(|a| a.bytes).sum()
    }

    /// What is still held, for a log or a failing test's message.
    pub fn leak_report(&self) -> LeakReport {
        let allocations = self.outstanding();
        let bytes = allocations.iter().map(|a| a.bytes).sum();
        LeakReport { allocations, bytes }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Outstanding>> {
        // Inserts and removes are single map operations: never half-done.
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<R: DeviceResource> DeviceResource for TrackingResource<R> {
    fn allocate(&self, bytes: u64, stream: StreamId) -> Result<DevicePtr, StorageError> {
        let ptr = self.inner.allocate(bytes, stream)?;
        let record = Outstanding {
            ptr,
            bytes,
            stream,
            sequence: self.sequence.fetch_add(1, Ordering::Relaxed) + 1,
            thread: thread_number(),
            backtrace: self.backtraces.then(|| Arc::new(Backtrace::capture())),
        };
        self.lock().insert(ptr.0, record);
        Ok(ptr)
    }

    fn deallocate(&self, ptr: DevicePtr, bytes: u64, stream: StreamId) -> Result<(), StorageError> {
        // Forward first: a refused free leaves the allocation outstanding.
        self.inner.deallocate(ptr, bytes, stream)?;
        self.lock().remove(&ptr.0);
        Ok(())
    }

    crate::forward_device_resource!(inner);
}
