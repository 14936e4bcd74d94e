//! Reserving with one retry, and the out-of-memory report.
//!
//! Like PyTorch's allocator (free cached blocks, retry, then raise), a
//! reservation that the device or its budget refuses first gives memory
//! back across the whole device — releases held allocations whose streams
//! finished, moves live data off outdated pages into room already held,
//! returns every empty page of every stream — and tries once more. Only then
//! is it an error, and the error is a report: what was asked, what the
//! device and budget hold, how much is reserved but free and in what shape,
//! who refused, and what to try — the numbers PyTorch's message lacks
//! (largest free block, per-stream holds, outdated pages pinned, the
//! budget's own limit).

use std::fmt;
use std::sync::atomic::Ordering;

use mem_budget::GLOBAL_BUDGET_BACKEND;
use mem_pools::{IoError, ManagedMemoryHandle};
use mem_relocate::{RelocatingStreams, RelocationReason};
use mem_storage::{DeviceResource, StorageError};

use crate::device::DeviceShared;
use crate::error::{GpuMemError, Result};
use crate::relocation::DeviceStreams;
use crate::stream::Stream;
use crate::units::format_bytes;

/// Who refused the memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refuser {
    /// The device budget (`GlobalDeviceBudget`): the device may have room,
    /// the budget does not.
    DeviceBudget,
    /// The device itself (its backend resource).
    Device,
}

/// Everything known when a reservation fails for lack of memory.
#[derive(Debug, Clone, PartialEq)]
pub struct OutOfMemoryReport {
    /// Bytes asked for.
    pub requested: u64,
    /// The stream that asked.
    pub stream: usize,
    /// The device's name.
    pub device: String,
    /// Total bytes of the device.
    pub device_total: u64,
    /// Free bytes of the device (after the retry).
    pub device_free: u64,
    /// The budget's limit (`None` when unlimited).
    pub budget_limit: Option<u64>,
    /// Bytes charged to the budget.
    pub budget_charged: u64,
    /// Who refused.
    pub refused_by: Refuser,
    /// Bytes of live slices on every stream.
    pub allocated: u64,
    /// Bytes of pages held by every stream.
    pub reserved: u64,
    /// `reserved − allocated`: held by gpumem but free.
    pub reserved_unallocated: u64,
    /// The largest free slice of the stream that asked.
    pub largest_free_block: u64,
    /// Bytes held for other streams' recorded use (`record_use`).
    pub held_for_streams: u64,
    /// Live bytes left on outdated pages that relocation could not move
    /// (pinned by a graph or a raw address).
    pub outdated_pinned_bytes: u64,
    /// A stream was recording, so nothing could be relocated.
    pub recording: Option<usize>,
}

impl OutOfMemoryReport {
    /// What to try, from the numbers.
    pub fn hint(&self) -> String {
        let mut hints = Vec::new();
        if self.refused_by == Refuser::DeviceBudget && self.device_free >= self.requested {
            hints.push("the device has room but the budget does not: raise it (GPUMEM_CONF=budget:…) or lower the batch".to_string());
        }
        if self.held_for_streams > 0 {
            hints.push(format!(
                "{} are held until other streams finish work they were recorded for: synchronize those streams",
                format_bytes(self.held_for_streams)
            ));
        }
        if self.outdated_pinned_bytes > 0 {
            hints.push(format!(
                "{} on outdated pages cannot move: release raw addresses (release_raw) or drop captured graphs, then reclaim",
                format_bytes(self.outdated_pinned_bytes)
            ));
        }
        if let Some(stream) = self.recording {
            hints.push(format!("stream {stream} is recording a graph, so nothing was relocated: end the capture and retry"));
        }
        if self.reserved_unallocated >= self.requested {
            hints.push(format!(
                "{} are reserved but free in pieces of at most {}: fragmentation — use larger pages (pools:sliced with a larger page_size, or max_page) or free buffers of other streams",
                format_bytes(self.reserved_unallocated),
                format_bytes(self.largest_free_block)
            ));
        }
        if hints.is_empty() {
            hints.push("live data fills the memory: free buffers, lower the batch size, or use a larger device".into());
        }
        hints.join("; ")
    }
}

impl fmt::Display for OutOfMemoryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = format_bytes;
        write!(
            f,
            "gpumem out of memory on {} (stream {}). Tried to allocate {}. The device has a total capacity of {} of which {} is free. ",
            self.device,
            self.stream,
            b(self.requested),
            b(self.device_total),
            b(self.device_free)
        )?;
        if let Some(limit) = self.budget_limit {
            write!(
                f,
                "The device budget allows {} ({} charged). ",
                b(limit),
                b(self.budget_charged)
            )?;
        }
        write!(
            f,
            "Of the memory gpumem holds, {} is allocated and {} is reserved but unallocated (largest free block on this stream: {}). ",
            b(self.allocated),
            b(self.reserved_unallocated),
            b(self.largest_free_block)
        )?;
        let who = match self.refused_by {
            Refuser::DeviceBudget => "the device budget",
            Refuser::Device => "the device",
        };
        write!(
            f,
            "Refused by {who} after cleanup and reclaim were tried once. Hint: {}.",
            self.hint()
        )
    }
}

/// Whether giving memory back may make a failed reservation succeed.
fn retryable(err: &IoError) -> bool {
    match err {
        IoError::Storage(e) => e.is_retryable(),
        _ => false,
    }
}

impl DeviceShared {
    /// Give back what every stream caches (PyTorch's free-cached-blocks
    /// step): relocate outdated pages into held room (memory pressure)
    /// unless a graph records, then return every empty page of every stream.
    pub(crate) fn free_cached_memory(&self) {
        let _moving = self.moving();
        let mut streams = DeviceStreams::new(self, 0);
        streams.relocate_device(RelocationReason::MemoryPressure);
        if let Err(err) = streams.finish_result() {
            tracing::warn!(%err, "relocation before the retry failed; cleaning up only");
        }
        for index in 0..self.streams.len() {
            self.run(index, |st| self.cleanup(st));
        }
    }

    fn oom_report(&self, stream: usize, requested: u64, cause: &StorageError) -> OutOfMemoryReport {
        let (mut allocated, mut reserved, mut held, mut pinned) = (0, 0, 0, 0);
        let mut largest = 0;
        for (i, s) in self.streams.iter().enumerate() {
            let st = s.lock();
            allocated += st.stats.allocated_bytes.current;
            reserved += st.stats.reserved_bytes.current;
            held += st.held_bytes();
            let shape = st.engine.relocation_state().shape;
            if shape.outdated_pinned > 0 {
                pinned += shape.outdated_live_bytes;
            }
            if i == stream {
                largest = st.stats.largest_free_block;
            }
        }
        let info = self.resource.upstream().mem_info().unwrap_or_default();
        let budget = self.resource.handle();
        let refused_by = match cause {
            StorageError::OutOfMemory { backend, .. } if *backend == GLOBAL_BUDGET_BACKEND => {
                Refuser::DeviceBudget
            }
            _ => Refuser::Device,
        };
        OutOfMemoryReport {
            requested,
            stream,
            device: self.name.clone(),
            device_total: info.total,
            device_free: info.free,
            budget_limit: budget.is_finite().then(|| budget.limit()),
            budget_charged: budget.charged(),
            refused_by,
            allocated,
            reserved,
            reserved_unallocated: reserved.saturating_sub(allocated),
            largest_free_block: largest,
            held_for_streams: held,
            outdated_pinned_bytes: pinned,
            recording: self.recording_stream(),
        }
    }
}

impl Stream {
    fn try_reserve(&self, size: u64) -> Result<ManagedMemoryHandle, IoError> {
        let poison = self.device.config.poison.is_some();
        self.device.run(self.index, |st| {
            let handle = st.engine.reserve(size)?;
            if poison {
                st.hold(&handle, None);
            }
            Ok(handle)
        })
    }

    /// Reserve `size` bytes on this stream.
    ///
    /// When the device or its budget refuses, every stream's cached memory
    /// is given back (and outdated pages relocated unless a graph records)
    /// and the reservation is tried once more.
    ///
    /// # Errors
    /// [`GpuMemError::OutOfMemory`] with the report when the retry fails for
    /// lack of memory; the pool engine's error for anything else (a size no
    /// pool accepts, a capture window that would allocate, ...).
    pub fn reserve(&self, size: u64) -> Result<ManagedMemoryHandle> {
        if self.device.config.auto_relocate
            && let Err(err) = self.relocate_when_wanted()
        {
            tracing::warn!(%err, stream = self.index, "automatic relocation failed");
        }
        let err = match self.try_reserve(size) {
            Ok(handle) => return Ok(handle),
            Err(IoError::PageSizesExhausted { .. }) => {
                // Relocating empties outdated pages, which gives the pool
                // its page sizes back; refused (and not retried) while a
                // graph records.
                self.relocate(RelocationReason::PoolsOutOfPageSizes)?;
                return Ok(self.try_reserve(size)?);
            }
            Err(err) if retryable(&err) => err,
            Err(err) => return Err(err.into()),
        };
        tracing::debug!(%err, size, stream = self.index, "reservation refused; freeing cached memory and retrying");
        self.device.retries.fetch_add(1, Ordering::Relaxed);
        self.shared().lock().stats.num_alloc_retries += 1;
        self.device.free_cached_memory();
        match self.try_reserve(size) {
            Ok(handle) => Ok(handle),
            Err(IoError::Storage(cause @ StorageError::OutOfMemory { .. })) => {
                self.device.ooms.fetch_add(1, Ordering::Relaxed);
                self.shared().lock().stats.num_ooms += 1;
                let report = self.device.oom_report(self.index, size, &cause);
                tracing::warn!(target: "gpumem", "{report}");
                Err(GpuMemError::OutOfMemory(Box::new(report)))
            }
            Err(err) => Err(err.into()),
        }
    }
}
