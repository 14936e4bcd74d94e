//! The device's moving lock: exclusive for everything that moves memory or
//! changes where it is (relocation, compaction, reclaim, freeing cached
//! memory before a retry, sleep and wake, marking a stream as recording),
//! shared for a launch (`Stream::launch`), which holds it while the runtime
//! reads its buffers' addresses, enqueues its work and counts it.
//!
//! So a relocation can never move a buffer between its "every stream
//! finished" and a launch on another thread: either the launch's work is
//! counted before the relocation begins (and the relocation finishes it
//! first), or the launch reads the addresses the relocation left.
//!
//! A thread holding a launch that asks for the exclusive lock on the same
//! device would wait for itself; it gets `GpuMemError::LaunchOpen` instead
//! (each thread keeps the devices it is launching on).

use std::cell::RefCell;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::error::{GpuMemError, Result};

thread_local! {
    /// The moving locks this thread holds shared (a launch is open).
    static LAUNCHING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// A device's moving lock.
#[derive(Debug, Default)]
pub(crate) struct MovingLock(RwLock<()>);

/// The lock held shared by a launch on this thread; dropping it releases.
#[derive(Debug)]
pub(crate) struct Launching<'a> {
    _shared: RwLockReadGuard<'a, ()>,
    key: usize,
}

impl MovingLock {
    fn key(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Whether this thread holds the lock shared (a launch is open).
    pub(crate) fn launching_here(&self) -> bool {
        let key = self.key();
        LAUNCHING.with(|l| l.borrow().contains(&key))
    }

    /// The lock, exclusive, for `operation` (a poisoned lock guards no
    /// state of its own).
    ///
    /// # Errors
    /// [`GpuMemError::LaunchOpen`] when this thread holds a launch on the
    /// device (waiting would wait for itself).
    pub(crate) fn exclusive(&self, operation: &'static str) -> Result<RwLockWriteGuard<'_, ()>> {
        if self.launching_here() {
            return Err(GpuMemError::LaunchOpen { operation });
        }
        Ok(self.0.write().unwrap_or_else(|p| p.into_inner()))
    }

    /// The lock, exclusive, unless this thread holds it shared: then no
    /// move can be in flight, and none begins before the launch ends.
    pub(crate) fn exclusive_unless_launching(&self) -> Option<RwLockWriteGuard<'_, ()>> {
        self.exclusive("").ok()
    }

    /// The lock, shared, for a launch on this thread.
    ///
    /// # Errors
    /// [`GpuMemError::LaunchOpen`] when this thread already holds a launch
    /// on the device (launch several buffers at once instead).
    pub(crate) fn shared(&self) -> Result<Launching<'_>> {
        if self.launching_here() {
            return Err(GpuMemError::LaunchOpen {
                operation: "a second launch",
            });
        }
        let shared = self.0.read().unwrap_or_else(|p| p.into_inner());
        let key = self.key();
        LAUNCHING.with(|l| l.borrow_mut().push(key));
        Ok(Launching {
            _shared: shared,
            key,
        })
    }
}

impl Drop for Launching<'_> {
    fn drop(&mut self) {
        LAUNCHING.with(|l| {
            let mut held = l.borrow_mut();
            if let Some(at) = held.iter().position(|&k| k == self.key) {
                held.swap_remove(at);
            }
        });
    }
}
