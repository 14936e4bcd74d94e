//! `DeviceRuntime`: the resource stack every allocation of a device goes through.
//!
//! The stack, top to bottom: [`GlobalDeviceBudget`](crate::GlobalDeviceBudget) (the device-wide hard
//! cap) → optional middle layers (mem-storage's logging adaptor, statistics,
//! fault injection in tests) → the device's backend resource (host memory by
//! default, CUDA for a CUDA device). The runtime hands the top out as an
//! `Arc<dyn DeviceResource>`, so the pool engine's storage can be built on
//! the very same stack and its pages are charged against the same budget.
//!
//! Frees are stream-ordered. A runtime built with
//! [`DeviceRuntimeBuilder::defer_frees`](crate::DeviceRuntimeBuilder::defer_frees) does not give memory back when an
//! allocation drops: the free waits in a queue until
//! [`DeviceRuntime::reap_pending_deallocations`] synchronises the stream and
//! completes it — the shape of a runtime that may not free while a kernel
//! could still be reading. A free the stack refuses is never forgotten: its
//! bytes stay charged and it waits in the same queue to be retried by the
//! next reap.

use std::fmt;
use std::sync::{Arc, Mutex};

use mem_storage::{DevicePtr, DeviceResource, LoggingResource, StorageError, StreamId};

use crate::account::Account;
use crate::device::BudgetDevice;
use crate::global_handle::GlobalBudgetHandle;

/// A middle layer of the stack: wraps the resource below into a new one.
pub type Layer = Box<dyn FnOnce(Arc<dyn DeviceResource>) -> Arc<dyn DeviceResource>>;

/// The logging layer of a runtime's stack: its event log is readable
/// through [`DeviceRuntime::log`].
pub type RuntimeLog = LoggingResource<Arc<dyn DeviceResource>>;

/// A free waiting for [`DeviceRuntime::reap_pending_deallocations`].
#[derive(Debug)]
struct PendingFree {
    ptr: DevicePtr,
    bytes: u64,
    owner: Option<Arc<Account>>,
    /// Whether an earlier attempt at this free failed.
    failed_before: bool,
}

/// The device resource stack, with stream-ordered deferred frees.
///
/// The xlog-compatible `GpuMemoryManager` API calls this `XlogDeviceRuntime`.
#[doc(alias = "XlogDeviceRuntime")]
pub struct DeviceRuntime {
    device: BudgetDevice,
    stack: Arc<dyn DeviceResource>,
    global: Option<GlobalBudgetHandle>,
    log: Option<Arc<RuntimeLog>>,
    stream: StreamId,
    defer_frees: bool,
    pending: Mutex<Vec<PendingFree>>,
}

impl fmt::Debug for DeviceRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceRuntime")
            .field("device", &self.device)
            .field("global_limit", &self.global.as_ref().map(|g| g.limit()))
            .field("stream", &self.stream)
            .field("defer_frees", &self.defer_frees)
            .field("pending", &self.pending_deallocations())
            .finish()
    }
}

impl DeviceRuntime {
    /// A runtime over a stack assembled by the caller (for example one
    /// [`GlobalDeviceBudget`](crate::GlobalDeviceBudget) shared by several runtimes of one device);
    /// `global` is that budget's handle, used for reservations.
    pub fn from_stack(
        device: BudgetDevice,
        stack: Arc<dyn DeviceResource>,
        global: Option<GlobalBudgetHandle>,
        stream: StreamId,
        defer_frees: bool,
    ) -> Self {
        Self::assemble(device, stack, global, None, stream, defer_frees)
    }

    pub(crate) fn assemble(
        device: BudgetDevice,
        stack: Arc<dyn DeviceResource>,
        global: Option<GlobalBudgetHandle>,
        log: Option<Arc<RuntimeLog>>,
        stream: StreamId,
        defer_frees: bool,
    ) -> Self {
        Self {
            device,
            stack,
            global,
            log,
            stream,
            defer_frees,
            pending: Mutex::new(Vec::new()),
        }
    }

    /// The device this runtime drives.
    pub fn device(&self) -> &BudgetDevice {
        &self.device
    }

    /// The top of the stack: build pool storage on this to charge its pages
    /// against the device budget.
    pub fn resource(&self) -> &Arc<dyn DeviceResource> {
        &self.stack
    }

    /// The device budget at the top of the stack, if any.
    pub fn global_budget(&self) -> Option<&GlobalBudgetHandle> {
        self.global.as_ref()
    }

    /// The logging layer, when the stack has one.
    pub fn log(&self) -> Option<&Arc<RuntimeLog>> {
        self.log.as_ref()
    }

    /// The stream allocations are made and freed on.
    pub fn stream(&self) -> StreamId {
        self.stream
    }

    /// Allocate `bytes` through the whole stack on the runtime's stream.
    pub fn allocate(&self, bytes: u64) -> Result<DevicePtr, StorageError> {
        self.stack.allocate(bytes, self.stream)
    }

    /// Free an allocation made by [`DeviceRuntime::allocate`] now, ignoring
    /// deferral (the caller vouches the stream is done with it).
    pub fn deallocate(&self, ptr: DevicePtr, bytes: u64) -> Result<(), StorageError> {
        self.stack.deallocate(ptr, bytes, self.stream)
    }

    /// Number of frees waiting for a reap (deferred, or failed and to be retried).
    pub fn pending_deallocations(&self) -> usize {
        self.lock().len()
    }

    /// Bytes of the frees waiting for a reap.
    pub fn pending_bytes(&self) -> u64 {
        self.lock().iter().map(|p| p.bytes).sum()
    }

    /// Free an allocation owned by a manager account: now, or queued.
    pub(crate) fn release(&self, ptr: DevicePtr, bytes: u64, owner: Option<Arc<Account>>) {
        if self.defer_frees {
            self.lock().push(PendingFree {
                ptr,
                bytes,
                owner,
                failed_before: false,
            });
            return;
        }
        if let Err((entry, _)) = self.complete(PendingFree {
            ptr,
            bytes,
            owner,
            failed_before: false,
        }) {
            self.lock().push(entry);
        }
    }

    /// Synchronise the stream, then complete every queued free. A free that
    /// fails again stays queued (and charged); the first error is returned
    /// after every free was attempted.
    pub fn reap_pending_deallocations(&self) -> Result<(), StorageError> {
        let queued = std::mem::take(&mut *self.lock());
        if queued.is_empty() {
            return Ok(());
        }
        if let Err(error) = self.stack.synchronize(self.stream) {
            // Nothing may be freed while the stream's work is unknown.
            self.lock().extend(queued);
            return Err(error);
        }
        let mut first_error = None;
        let mut still_pending = Vec::new();
        for entry in queued {
            if let Err((entry, error)) = self.complete(entry) {
                first_error.get_or_insert(error);
                still_pending.push(entry);
            }
        }
        self.lock().extend(still_pending);
        first_error.map_or(Ok(()), Err)
    }

    /// Try one free; settle its owner's account either way.
    fn complete(&self, mut entry: PendingFree) -> Result<(), (PendingFree, StorageError)> {
        match self.stack.deallocate(entry.ptr, entry.bytes, self.stream) {
            Ok(()) => {
                if let Some(owner) = &entry.owner {
                    if entry.failed_before {
                        owner.settle_retried_free(entry.bytes);
                    } else {
                        owner.release(entry.bytes);
                    }
                }
                Ok(())
            }
            Err(error) => {
                tracing::error!(ptr = entry.ptr.0, bytes = entry.bytes, %error,
                    "runtime free failed; bytes stay charged until a reap succeeds");
                if let Some(owner) = &entry.owner {
                    owner.record_free_failure(entry.bytes, !entry.failed_before);
                }
                entry.failed_before = true;
                Err((entry, error))
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<PendingFree>> {
        // Every mutation is a push, an extend or a take: a panic mid-way
        // cannot leave the queue inconsistent.
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for DeviceRuntime {
    /// Complete whatever is still queued: every allocation that could free
    /// through this runtime is gone, so its streams' work is the last there
    /// is. A free that still fails is reported and leaked, never dropped
    /// from the books as if it had succeeded.
    fn drop(&mut self) {
        if let Err(error) = self.reap_pending_deallocations() {
            tracing::error!(
                %error,
                pending = self.pending_deallocations(),
                bytes = self.pending_bytes(),
                "runtime dropped with frees that failed; their bytes stay charged"
            );
        }
    }
}
