//! [`TrackingResource`] over a [`VirtualMemory`]: which ranges and chunks
//! are outstanding, where each chunk is mapped, and a leak report.
//!
//! Ranges and chunks are kept until freed / released (with the thread, the
//! order, and a backtrace when asked for), and each chunk's mapping is
//! followed through map and unmap, so a test can end with "nothing is
//! held" and a leak says which chunk is still mapped where. Only calls made
//! through this adaptor are seen.

use std::backtrace::Backtrace;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

use crate::adaptors::logging::event_log::thread_number;
use crate::adaptors::tracking::TrackingResource;
use crate::error::StorageError;
use crate::id::DevicePtr;
use crate::vm::{ChunkId, RangeId, VaRange, VirtualMemory};

/// A reserved range not yet freed.
#[derive(Debug, Clone)]
pub struct OutstandingRange {
    /// The range.
    pub range: VaRange,
    /// 1-based order among the calls tracked by this adaptor.
    pub sequence: u64,
    /// Log number of the reserving thread.
    pub thread: u64,
    /// Where it was reserved, when backtraces are on.
    pub backtrace: Option<Arc<Backtrace>>,
}

/// A chunk not yet released.
#[derive(Debug, Clone)]
pub struct OutstandingChunk {
    /// The chunk.
    pub chunk: ChunkId,
    /// Its size.
    pub bytes: u64,
    /// Where it is mapped now: range and offset.
    pub mapped_at: Option<(RangeId, u64)>,
    /// 1-based order among the calls tracked by this adaptor.
    pub sequence: u64,
    /// Log number of the creating thread.
    pub thread: u64,
    /// Where it was created, when backtraces are on.
    pub backtrace: Option<Arc<Backtrace>>,
}

/// What is still held through virtual memory, oldest first.
#[derive(Debug, Clone, Default)]
pub struct VirtualLeakReport {
    /// Ranges not freed.
    pub ranges: Vec<OutstandingRange>,
    /// Chunks not released.
    pub chunks: Vec<OutstandingChunk>,
}

impl VirtualLeakReport {
    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty() && self.chunks.is_empty()
    }
}

impl fmt::Display for VirtualLeakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return writeln!(f, "no outstanding ranges or chunks");
        }
        for r in &self.ranges {
            let (id, base, len) = (r.range.id, r.range.base, r.range.len);
            writeln!(f, "  {id} at {base} ({len} bytes), #{}", r.sequence)?;
        }
        for c in &self.chunks {
            write!(f, "  {} ({} bytes), #{}", c.chunk, c.bytes, c.sequence)?;
            match c.mapped_at {
                Some((range, offset)) => writeln!(f, ", mapped at offset {offset} of {range}")?,
                None => writeln!(f, ", not mapped")?,
            }
        }
        Ok(())
    }
}

/// The ranges and chunks a [`TrackingResource`] follows.
#[derive(Debug, Default)]
pub(crate) struct VmLive {
    ranges: BTreeMap<RangeId, OutstandingRange>,
    chunks: BTreeMap<ChunkId, OutstandingChunk>,
}

impl<R> TrackingResource<R> {
    /// Ranges and chunks still held through this adaptor, oldest first.
    pub fn virtual_leak_report(&self) -> VirtualLeakReport {
        let live = self.vm_lock();
        let mut ranges: Vec<_> = live.ranges.values().cloned().collect();
        let mut chunks: Vec<_> = live.chunks.values().cloned().collect();
        ranges.sort_by_key(|r| r.sequence);
        chunks.sort_by_key(|c| c.sequence);
        VirtualLeakReport { ranges, chunks }
    }

    fn vm_lock(&self) -> MutexGuard<'_, VmLive> {
        // Single inserts, removes and field stores: never half-done.
        self.vm.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stamp(&self) -> (u64, u64, Option<Arc<Backtrace>>) {
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed) + 1;
        let backtrace = self.backtraces.then(|| Arc::new(Backtrace::capture()));
        (sequence, thread_number(), backtrace)
    }
}

impl<V: VirtualMemory> VirtualMemory for TrackingResource<V> {
    fn reserve_range(&self, bytes: u64) -> Result<VaRange, StorageError> {
        let range = self.inner().reserve_range(bytes)?;
        let (sequence, thread, backtrace) = self.stamp();
        let record = OutstandingRange {
            range,
            sequence,
            thread,
            backtrace,
        };
        self.vm_lock().ranges.insert(range.id, record);
        Ok(range)
    }

    fn free_range(&self, range: RangeId) -> Result<(), StorageError> {
        // Forward first: a refused free leaves the range outstanding.
        self.inner().free_range(range)?;
        self.vm_lock().ranges.remove(&range);
        Ok(())
    }

    fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
        let chunk = self.inner().create_chunk(bytes)?;
        let (sequence, thread, backtrace) = self.stamp();
        let record = OutstandingChunk {
            chunk,
            bytes,
            mapped_at: None,
            sequence,
            thread,
            backtrace,
        };
        self.vm_lock().chunks.insert(chunk, record);
        Ok(chunk)
    }

    fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError> {
        self.inner().release_chunk(chunk)?;
        self.vm_lock().chunks.remove(&chunk);
        Ok(())
    }

    fn map(&self, range: RangeId, offset: u64, chunk: ChunkId) -> Result<DevicePtr, StorageError> {
        let at = self.inner().map(range, offset, chunk)?;
        if let Some(c) = self.vm_lock().chunks.get_mut(&chunk) {
            c.mapped_at = Some((range, offset));
        }
        Ok(at)
    }

    fn unmap(&self, range: RangeId, offset: u64, bytes: u64) -> Result<Vec<ChunkId>, StorageError> {
        let chunks = self.inner().unmap(range, offset, bytes)?;
        let mut live = self.vm_lock();
        for chunk in &chunks {
            if let Some(c) = live.chunks.get_mut(chunk) {
                c.mapped_at = None;
            }
        }
        Ok(chunks)
    }

    crate::forward_virtual_memory!(inner);
}
