//! `LoggingResource`: every allocate, free and failure as a replayable event.
//!
//! RMM's `logging_resource_adaptor`, kept in memory: events are appended to
//! a vector under a mutex (one push per call, no formatting on the hot
//! path) and written out on demand as RMM CSV ([`LoggingResource::to_csv`])
//! or as a gpumem trace ([`LoggingResource::write_trace`]). A long-running
//! process drains the log periodically with [`LoggingResource::drain`].
//! Byte movement is forwarded untouched and not logged: a replayer needs
//! the allocation program, not the data. Over a [`crate::VirtualMemory`]
//! the same adaptor logs reserve, free, create, release, map and unmap as
//! [`crate::VmEvent`]s in a log of their own (see
//! `logging/virtual_memory.rs`): they are not allocations and have no place
//! in RMM's CSV.

use std::io::{self, Write};
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::error::StorageError;
use crate::id::{DevicePtr, StreamId};
use crate::resource::DeviceResource;
use event_log::{Action, ResourceEvent, thread_number};

pub(crate) mod event_log;
pub(crate) mod tag;
mod virtual_memory;

pub use virtual_memory::{VmAction, VmEvent};

/// A resource that records every allocate and free made through it.
#[derive(Debug)]
pub struct LoggingResource<R> {
    inner: R,
    events: Mutex<Vec<ResourceEvent>>,
    /// Virtual-memory calls, when the inner resource has virtual memory.
    pub(crate) vm_events: Mutex<Vec<crate::VmEvent>>,
    /// Wall-clock time of `start`, in ns since the UNIX epoch.
    epoch_ns: u64,
    /// Monotonic clock the event times are measured with.
    start: Instant,
}

impl<R> LoggingResource<R> {
    /// Log every allocate and free made through `inner`.
    pub fn new(inner: R) -> Self {
        let epoch_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        Self {
            inner,
            events: Mutex::new(Vec::new()),
            vm_events: Mutex::new(Vec::new()),
            epoch_ns,
            start: Instant::now(),
        }
    }

    /// The wrapped resource.
    pub fn inner(&self) -> &R {
        &self.inner
    }

    /// A copy of every event logged so far, in call order.
    pub fn events(&self) -> Vec<ResourceEvent> {
        self.lock().clone()
    }

    /// Take every event logged so far, leaving the log empty.
    pub fn drain(&self) -> Vec<ResourceEvent> {
        std::mem::take(&mut *self.lock())
    }

    /// The log as RMM logging-adaptor CSV (see [`event_log::write_csv`]).
    pub fn to_csv(&self) -> String {
        let mut out = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = event_log::write_csv(&self.lock(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// Write the log as a gpumem JSON Lines trace (see
    /// [`event_log::write_trace`]); returns the number of frees left out
    /// because their allocation predates the log.
    pub fn write_trace<W: Write>(&self, out: W) -> io::Result<u64> {
        event_log::write_trace(&self.lock(), out)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ResourceEvent>> {
        // A push cannot leave the vector half-changed.
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Now, in ns since the UNIX epoch, on this log's monotonic clock.
    pub(crate) fn now_ns(&self) -> u64 {
        let elapsed = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.epoch_ns.saturating_add(elapsed)
    }

    fn log(&self, action: Action, ptr: u64, bytes: u64, stream: StreamId) {
        let event = ResourceEvent {
            thread: thread_number(),
            time_ns: self.now_ns(),
            action,
            ptr,
            bytes,
            stream,
            tag: match action {
                Action::Allocate | Action::AllocateFailure => {
                    crate::adaptors::logging::tag::current_tag()
                }
                Action::Free | Action::FreeFailure => None,
            },
        };
        let mut events = self.lock();
        // Two threads may read the clock in one order and lock in the other;
        // keep times monotonic in log order, as a replayer expects.
        let event = match events.last() {
            Some(last) if last.time_ns > event.time_ns => ResourceEvent {
                time_ns: last.time_ns,
                ..event
            },
            _ => event,
        };
        events.push(event);
    }
}

impl<R: DeviceResource> DeviceResource for LoggingResource<R> {
    fn allocate(&self, bytes: u64, stream: StreamId) -> Result<DevicePtr, StorageError> {
        let result = self.inner.allocate(bytes, stream);
        match &result {
            Ok(ptr) => self.log(Action::Allocate, ptr.0, bytes, stream),
            Err(_) => self.log(Action::AllocateFailure, 0, bytes, stream),
        }
        result
    }

    fn deallocate(&self, ptr: DevicePtr, bytes: u64, stream: StreamId) -> Result<(), StorageError> {
        let result = self.inner.deallocate(ptr, bytes, stream);
        let action = if result.is_ok() {
            Action::Free
        } else {
            Action::FreeFailure
        };
        self.log(action, ptr.0, bytes, stream);
        result
    }

    crate::forward_device_resource!(inner);
}
