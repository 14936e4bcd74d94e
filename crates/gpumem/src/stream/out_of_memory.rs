//! The one out-of-memory retry, for reserving and for a lazy page's first
//! touch alike, and the report an unrecoverable refusal carries.
//!
//! Like PyTorch's allocator (free cached blocks, retry, then raise): an
//! attempt the device or its budget refuses first gives memory back across
//! the whole device — waits for the streams whose work memory waits for
//! (and only those) and releases that memory, relocates outdated pages into room already
//! held (unless a graph records), returns every empty page of every stream
//! — and is tried once more (mem-relocate's `ReserveRetry` decides). Only
//! then is it [`crate::GpuMemError::OutOfMemory`] with an [`OutOfMemoryReport`].
//! A reservation whose pools ran out of page sizes is relocated for that
//! reason and retried once; anything freeing cannot fix is returned as is.
//!
//! With lazy pages (and in a lazy arena) a reservation only counts memory;
//! the page is allocated, or the chunks mapped, at the first dereference
//! (`view`, `read`, `write`, `device_ptr`), which is where the device can
//! refuse: an access gets the same retry, and its report's `requested` is
//! the bytes the storage was asked for (the page, or the chunks).

use std::sync::atomic::Ordering;

use mem_pools::{IoError, ManagedMemoryBinding, ManagedMemoryHandle};
use mem_relocate::{RelocationReason, ReserveRetry, RetryStep};
use mem_storage::{ComputeStorage, DeviceResource, StorageError};

use crate::error::{GpuMemError, OutOfMemoryReport, Refuser, Result};
use crate::relocation;
use crate::shared::{DeviceShared, Stream, StreamState};

/// The retry's one wait: each stream whose work memory waits for is
/// synchronized and marked complete, and nothing more —
/// - a stream one of whose idle arena chunks waits for its work
///   (mem-pools' `arena_chunks_waiting`), so the cleanup that follows can
///   give the chunk back;
/// - a stream whose recorded use (`record_use`) holds an allocation its
///   user dropped; the holds those waits ended are released at once, so
///   the free-cached step finds nothing held and needs no device-wide
///   finish.
///
/// Streams with none are not waited for; no reserve, free or cleanup path
/// outside this retry waits for them.
fn finish_for_waiting_memory(device: &DeviceShared) {
    let mut wait = vec![false; device.streams.len()];
    let mut holders = Vec::new();
    for (i, stream) in device.streams.iter().enumerate() {
        let st = stream.lock();
        wait[i] |= st.engine.arena_chunks_waiting();
        if !st.held.is_empty() {
            st.mark_holding_streams(&device.streams, &mut wait);
            holders.push(i);
        }
    }
    for (stream, _) in device.streams.iter().zip(&wait).filter(|(_, w)| **w) {
        if let Err(err) = stream.synchronized(|| stream.lock().engine.storage().synchronize()) {
            tracing::warn!(%err, "waiting for a stream's work that memory waits for failed");
        }
    }
    for i in holders {
        // A call settles holds first; drops queued since may end a hold's
        // last other holder (as in `DeviceShared::cleanup`).
        device.run(i, |st| {
            st.engine.drain_drops();
            st.settle(&device.streams, device.config.poison);
        });
    }
}

/// What a refused attempt was.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Attempt {
    /// A reservation of this many bytes (it may relocate for page sizes).
    Reserve(u64),
    /// Reaching existing memory (an access never grows a pool).
    Access,
}

/// Retry `attempt`, which `first` refused on stream `owner`, as the module
/// docs say.
#[cold]
#[inline(never)]
pub(crate) fn retry<T>(
    stream: &Stream,
    owner: usize,
    kind: Attempt,
    first: IoError,
    mut attempt: impl FnMut() -> Result<T, IoError>,
) -> Result<T> {
    let device = &stream.device;
    let mut retry = ReserveRetry::new();
    let mut refused = Some(first);
    loop {
        let err = match refused.take().map_or_else(&mut attempt, Err) {
            Ok(value) => return Ok(value),
            Err(err) => err,
        };
        match (retry.next(&err), err, kind) {
            (RetryStep::RelocateForPageSizes, err, Attempt::Reserve(_)) => {
                // Emptying outdated pages gives the pool its page sizes
                // back; while a graph records nothing may move, and the
                // pool's own error says what to do.
                let reason = RelocationReason::PoolsOutOfPageSizes;
                if let Err(reloc) = relocation::relocate_stream(device, owner, reason) {
                    tracing::warn!(%reloc, stream = owner, "relocation for page sizes refused");
                    return Err(err.into());
                }
            }
            (RetryStep::FreeCachedMemory, err, _) => {
                tracing::debug!(%err, stream = owner, ?kind, "refused; freeing cached memory and retrying");
                device.retries.fetch_add(1, Ordering::Relaxed);
                device.streams[owner].lock().tally.num_alloc_retries += 1;
                finish_for_waiting_memory(device);
                relocation::free_cached_memory(device);
            }
            (
                RetryStep::GiveUp,
                IoError::Storage(cause @ StorageError::OutOfMemory { requested, .. }),
                _,
            ) => {
                device.ooms.fetch_add(1, Ordering::Relaxed);
                device.streams[owner].lock().tally.num_ooms += 1;
                let requested = match kind {
                    Attempt::Reserve(size) => size,
                    Attempt::Access => requested,
                };
                let report = oom_report(device, owner, requested, &cause);
                tracing::warn!(target: "gpumem", "{report}");
                return Err(GpuMemError::OutOfMemory(Box::new(report)));
            }
            (_, err, _) => return Err(err.into()),
        }
    }
}

/// Run `f` on the engine of stream `owner` (the stream that owns the memory
/// `f` reaches), with the retry on an out-of-memory refusal.
pub(crate) fn access<T>(
    stream: &Stream,
    owner: usize,
    mut f: impl FnMut(&mut StreamState) -> Result<T, IoError>,
) -> Result<T> {
    match stream.device.run(owner, &mut f) {
        Ok(value) => Ok(value),
        Err(first) => retry(stream, owner, Attempt::Access, first, || {
            stream.device.run(owner, &mut f)
        }),
    }
}

/// Run `f` on the engine of the stream that owns `handle`, with `handle`'s
/// binding, and the retry on an out-of-memory refusal.
pub(crate) fn on_owner<T>(
    stream: &Stream,
    handle: &ManagedMemoryHandle,
    mut f: impl FnMut(&mut StreamState, ManagedMemoryBinding) -> Result<T, IoError>,
) -> Result<T> {
    let owner = stream.device.owner(handle)?;
    access(stream, owner, |st| f(st, handle.binding()))
}

/// The report of a refusal the retry could not fix: every number needed to
/// act, read from every stream.
fn oom_report(
    device: &DeviceShared,
    stream: usize,
    requested: u64,
    cause: &StorageError,
) -> OutOfMemoryReport {
    let (mut allocated, mut reserved, mut held, mut pinned) = (0, 0, 0, 0);
    let (mut largest, mut arena_cached) = (0, None);
    for (i, s) in device.streams.iter().enumerate() {
        let mut st = s.lock();
        let counters = st.engine.counters();
        allocated += counters.allocated_bytes.current;
        reserved += counters.reserved_bytes.current;
        held += st.held_bytes();
        let shape = st.engine.relocation_state().shape;
        if shape.outdated_pinned > 0 {
            pinned += shape.outdated_live_bytes;
        }
        if i == stream {
            let now = st.stats_now();
            largest = now.largest_free_block;
            if now.chunks.virtual_bytes > 0 {
                arena_cached = Some(now.chunks.cached_bytes);
            }
        }
    }
    let info = device.resource.upstream().mem_info().unwrap_or_default();
    let budget = device.resource.handle();
    if let Some(cached) = arena_cached {
        // An arena's free address range is not memory: a slice there
        // can only map what the device (and the budget) has left, plus
        // the stream's idle cached chunks.
        let budget_room = if budget.is_finite() {
            budget.limit().saturating_sub(budget.charged())
        } else {
            u64::MAX
        };
        largest = largest.min(info.free.min(budget_room).saturating_add(cached));
    }
    let refused_by = cause.refused_by().unwrap_or(Refuser::Device);
    OutOfMemoryReport {
        requested,
        stream,
        device: device.name.clone(),
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
        recording: device.recording_stream(),
    }
}
