//! `FaultInjection`: make chosen calls fail, to test every error path.
//!
//! The tool every higher crate's tests use. A scenario runs once through an
//! unarmed adaptor to count its calls ([`FaultInjection::calls`]), then once
//! per `k` with the k-th counted call failing ([`FaultPlan::Nth`]); after
//! each run the test checks that nothing was lost.
//!
//! A failed call never reaches the inner resource, so it changes nothing
//! there: exactly what the contract asks of a refusal. Which operations
//! count is chosen with [`FaultInjection::counting`]; by default all do.
//! The plan can be changed at any time through `&self`, so an adaptor
//! already shared behind an `Arc` can be armed mid-scenario. Over a
//! [`crate::VirtualMemory`] it gates reserve, free, create, release, map
//! and unmap too (`fault/virtual_memory.rs`).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::adaptors::fault::plan::{Call, FaultPlan, Operation};
use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};
use crate::resource::{DeviceResource, MemInfo};

pub(crate) mod plan;
mod virtual_memory;

#[derive(Debug, Default)]
struct Arming {
    plan: FaultPlan,
    /// The error to return instead of [`StorageError::Injected`].
    error: Option<StorageError>,
}

/// A resource that fails chosen calls and counts every call.
#[derive(Debug)]
pub struct FaultInjection<R> {
    inner: R,
    arming: Mutex<Arming>,
    counted: u16,
    calls: AtomicU64,
    injected: AtomicU64,
}

impl<R> FaultInjection<R> {
    /// Count every call to `inner`; fail none until a plan is set.
    pub fn new(inner: R) -> Self {
        Self {
            inner,
            arming: Mutex::new(Arming::default()),
            counted: Operation::ALL.iter().fold(0, |m, op| m | op.bit()),
            calls: AtomicU64::new(0),
            injected: AtomicU64::new(0),
        }
    }

    /// Count (and so possibly fail) only `operations`; others pass untouched.
    pub fn counting(mut self, operations: &[Operation]) -> Self {
        self.counted = operations.iter().fold(0, |m, op| m | op.bit());
        self
    }

    /// Fail the calls `plan` picks (builder form of [`Self::set_plan`]).
    pub fn with_plan(self, plan: FaultPlan) -> Self {
        self.set_plan(plan);
        self
    }

    /// Fail with `error` instead of [`StorageError::Injected`] (for example
    /// an out-of-memory, to test a reclaim-and-retry path).
    pub fn with_error(self, error: StorageError) -> Self {
        self.lock().error = Some(error);
        self
    }

    /// Replace the plan; the call count keeps running.
    pub fn set_plan(&self, plan: FaultPlan) {
        self.lock().plan = plan;
    }

    /// Stop failing calls (counting goes on).
    pub fn disarm(&self) {
        self.set_plan(FaultPlan::Never);
    }

    /// Counted calls so far, failed ones included.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Calls failed so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }

    /// Restart the call count at zero (the plan's indices count from here).
    pub fn reset_count(&self) {
        self.calls.store(0, Ordering::Relaxed);
    }

    /// The wrapped resource.
    pub fn inner(&self) -> &R {
        &self.inner
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Arming> {
        // Arming is replaced whole; a poisoned lock still holds a valid plan.
        self.arming.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Count the call if its operation is counted; fail it if the plan says so.
    pub(crate) fn gate(
        &self,
        operation: Operation,
        bytes: u64,
        ptr: Option<DevicePtr>,
        stream: StreamId,
    ) -> Result<(), StorageError> {
        if self.counted & operation.bit() == 0 {
            return Ok(());
        }
        let index = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let call = Call {
            index,
            operation,
            bytes,
            ptr,
            stream,
        };
        // Evaluate outside the lock: a predicate may itself call the resource.
        let plan = self.lock().plan.clone();
        if !plan.fails(&call) {
            return Ok(());
        }
        self.injected.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(index, operation = operation.as_str(), "injecting a fault");
        Err(self.lock().error.clone().unwrap_or(StorageError::Injected {
            call: index,
            operation: operation.as_str(),
        }))
    }
}

impl<R: DeviceResource> DeviceResource for FaultInjection<R> {
    fn allocate(&self, bytes: u64, stream: StreamId) -> Result<DevicePtr, StorageError> {
        self.gate(Operation::Allocate, bytes, None, stream)?;
        self.inner.allocate(bytes, stream)
    }

    fn deallocate(&self, ptr: DevicePtr, bytes: u64, stream: StreamId) -> Result<(), StorageError> {
        self.gate(Operation::Deallocate, bytes, Some(ptr), stream)?;
        self.inner.deallocate(ptr, bytes, stream)
    }

    fn mem_info(&self) -> Result<MemInfo, StorageError> {
        self.gate(Operation::MemInfo, 0, None, StreamId::DEFAULT)?;
        self.inner.mem_info()
    }

    fn write(&self, dst: DevicePtr, data: &[u8], stream: StreamId) -> Result<(), StorageError> {
        self.gate(Operation::Write, data.len() as u64, Some(dst), stream)?;
        self.inner.write(dst, data, stream)
    }

    fn read(&self, src: DevicePtr, out: &mut [u8], stream: StreamId) -> Result<(), StorageError> {
        self.gate(Operation::Read, out.len() as u64, Some(src), stream)?;
        self.inner.read(src, out, stream)
    }

    fn fill(&self, dst: DevicePtr, value: u8, bytes: u64, s: StreamId) -> Result<(), StorageError> {
        self.gate(Operation::Fill, bytes, Some(dst), s)?;
        self.inner.fill(dst, value, bytes, s)
    }

    fn copy(
        &self,
        src: DevicePtr,
        dst: DevicePtr,
        bytes: u64,
        s: StreamId,
    ) -> Result<(), StorageError> {
        self.gate(Operation::Copy, bytes, Some(dst), s)?;
        self.inner.copy(src, dst, bytes, s)
    }

    fn synchronize(&self, stream: StreamId) -> Result<(), StorageError> {
        self.gate(Operation::Synchronize, 0, None, stream)?;
        self.inner.synchronize(stream)
    }

    fn stream_wait(&self, waiter: StreamId, waited: StreamId) -> Result<(), StorageError> {
        self.gate(Operation::StreamWait, 0, None, waiter)?;
        self.inner.stream_wait(waiter, waited)
    }

    // Queries that cannot fail are not gated.
    crate::forward_device_resource!(inner: backend, alignment, holds_memory);
}
