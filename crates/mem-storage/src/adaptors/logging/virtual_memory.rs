//! [`LoggingResource`] over a [`VirtualMemory`]: every lifecycle call as a
//! [`VmEvent`], refusals included.
//!
//! A separate log from the allocation events: reserve / create / map are
//! not allocations, and RMM's CSV and the gpumem trace have no words for
//! them. What the log is for: seeing how often an arena maps and unmaps
//! (each costs a system or driver call), and replaying an arena's physical
//! program on another backend. Queries and byte access are not logged.

use std::sync::MutexGuard;

use crate::adaptors::logging::LoggingResource;
use crate::adaptors::logging::event_log::thread_number;
use crate::error::StorageError;
use crate::id::DevicePtr;
use crate::vm::{ChunkId, RangeId, VaRange, VirtualMemory};

/// What a logged virtual-memory call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VmAction {
    /// `reserve_range`.
    ReserveRange,
    /// `free_range`.
    FreeRange,
    /// `create_chunk`.
    CreateChunk,
    /// `release_chunk`.
    ReleaseChunk,
    /// `map`.
    Map,
    /// `unmap`.
    Unmap,
}

/// One logged virtual-memory call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VmEvent {
    /// Log number of the calling thread (as in [`crate::ResourceEvent`]).
    pub thread: u64,
    /// Nanoseconds since the UNIX epoch; never decreases within one log.
    pub time_ns: u64,
    /// What was called.
    pub action: VmAction,
    /// The range involved (reserve: the new one, when it succeeded).
    pub range: Option<RangeId>,
    /// The chunk involved (create: the new one, when it succeeded; unmap:
    /// the first one unmapped).
    pub chunk: Option<ChunkId>,
    /// Offset in the range (map, unmap), else 0.
    pub offset: u64,
    /// Bytes asked for (reserve, create, unmap), else 0.
    pub bytes: u64,
    /// The address involved: a reserved base or a mapped address, else 0.
    pub ptr: u64,
    /// Whether the backend refused the call (nothing changed then).
    pub refused: bool,
}

impl<R> LoggingResource<R> {
    /// A copy of every virtual-memory event logged so far, in call order.
    pub fn vm_events(&self) -> Vec<VmEvent> {
        self.vm_lock().clone()
    }

    /// Take every virtual-memory event logged so far, leaving that log empty.
    pub fn drain_vm_events(&self) -> Vec<VmEvent> {
        std::mem::take(&mut *self.vm_lock())
    }

    fn vm_lock(&self) -> MutexGuard<'_, Vec<VmEvent>> {
        // A push cannot leave the vector half-changed.
        self.vm_events.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn log_vm<T>(&self, result: &Result<T, StorageError>, event: VmEvent) {
        let mut events = self.vm_lock();
        // Keep times monotonic in log order, as in the allocation log.
        let now = self.now_ns();
        let time_ns = events.last().map_or(now, |last| last.time_ns.max(now));
        events.push(VmEvent {
            time_ns,
            refused: result.is_err(),
            ..event
        });
    }
}

fn event(action: VmAction) -> VmEvent {
    VmEvent {
        thread: thread_number(),
        time_ns: 0,
        action,
        range: None,
        chunk: None,
        offset: 0,
        bytes: 0,
        ptr: 0,
        refused: false,
    }
}

impl<V: VirtualMemory> VirtualMemory for LoggingResource<V> {
    fn reserve_range(&self, bytes: u64) -> Result<VaRange, StorageError> {
        let result = self.inner().reserve_range(bytes);
        let (range, ptr) = result
            .as_ref()
            .map_or((None, 0), |r| (Some(r.id), r.base.0));
        let e = event(VmAction::ReserveRange);
        self.log_vm(
            &result,
            VmEvent {
                range,
                ptr,
                bytes,
                ..e
            },
        );
        result
    }

    fn free_range(&self, range: RangeId) -> Result<(), StorageError> {
        let result = self.inner().free_range(range);
        let e = event(VmAction::FreeRange);
        let range = Some(range);
        self.log_vm(&result, VmEvent { range, ..e });
        result
    }

    fn create_chunk(&self, bytes: u64) -> Result<ChunkId, StorageError> {
        let result = self.inner().create_chunk(bytes);
        let chunk = result.as_ref().ok().copied();
        let e = event(VmAction::CreateChunk);
        self.log_vm(&result, VmEvent { chunk, bytes, ..e });
        result
    }

    fn release_chunk(&self, chunk: ChunkId) -> Result<(), StorageError> {
        let result = self.inner().release_chunk(chunk);
        let e = event(VmAction::ReleaseChunk);
        let chunk = Some(chunk);
        self.log_vm(&result, VmEvent { chunk, ..e });
        result
    }

    fn map(&self, range: RangeId, offset: u64, chunk: ChunkId) -> Result<DevicePtr, StorageError> {
        let result = self.inner().map(range, offset, chunk);
        let ptr = result.as_ref().map_or(0, |p| p.0);
        let e = event(VmAction::Map);
        let (range, chunk) = (Some(range), Some(chunk));
        self.log_vm(
            &result,
            VmEvent {
                range,
                chunk,
                offset,
                ptr,
                ..e
            },
        );
        result
    }

    fn unmap(&self, range: RangeId, offset: u64, bytes: u64) -> Result<Vec<ChunkId>, StorageError> {
        let result = self.inner().unmap(range, offset, bytes);
        let e = event(VmAction::Unmap);
        let range = Some(range);
        let chunk = result.as_ref().ok().and_then(|c| c.first().copied());
        self.log_vm(
            &result,
            VmEvent {
                range,
                chunk,
                offset,
                bytes,
                ..e
            },
        );
        result
    }

    crate::forward_virtual_memory!(inner);
}
