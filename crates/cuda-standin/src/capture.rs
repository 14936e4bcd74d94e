//! Stream capture.
//!
//! A capturing stream records [`Raw`] work as nodes (addresses checked as
//! the driver checks a node's parameters, resolved again at each launch,
//! so a graph replayed over memory freed since its capture is caught). A
//! launch queues the nodes on the stream in capture order. Stream-ordered
//! allocations inside a capture are memory nodes (`MEM_ALLOC`/`MEM_FREE`),
//! their memory the graph's until it is destroyed.
//!
//! Capture modes as the driver states them: while a thread has a capture
//! in `GLOBAL` or `THREAD_LOCAL` mode open, or any thread one in `GLOBAL`
//! mode, the calls that are not legal in a capture ([`forbid`]: allocation
//! and mapping calls, synchronizing the capturing stream) fail with
//! `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` and invalidate the capture.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use crate::sync::{lock, violation};
use crate::types::{
    CAPTURE_GLOBAL, CAPTURE_RELAXED, Outcome, STREAM_CAPTURE_INVALIDATED,
    STREAM_CAPTURE_UNSUPPORTED,
};
use crate::work::{Raw, resolve};

pub struct Capture {
    pub mode: u32,
    pub thread: ThreadId,
    pub nodes: Vec<Raw>,
    /// Shared with [`CAPTURES`], so a forbidden call elsewhere can
    /// invalidate it.
    pub invalidated: Arc<AtomicBool>,
    pub id: u64,
    /// Graph-owned allocations made by the capture's memory nodes.
    pub allocs: Vec<u64>,
}

impl Capture {
    pub fn new(mode: u32, id: u64) -> Self {
        Capture {
            mode,
            thread: std::thread::current().id(),
            nodes: Vec::new(),
            invalidated: Arc::new(AtomicBool::new(false)),
            id,
            allocs: Vec::new(),
        }
    }

    pub fn is_invalidated(&self) -> bool {
        self.invalidated.load(Ordering::Acquire)
    }

    pub fn invalidate(&self) {
        self.invalidated.store(true, Ordering::Release);
    }

    /// Record `raw` as a node after checking its addresses (as device
    /// `dev`, the capturing stream's, touches them).
    pub fn record(&mut self, raw: Raw, what: &str, dev: usize) -> Outcome {
        if self.is_invalidated() {
            return Err(STREAM_CAPTURE_INVALIDATED);
        }
        match resolve(&raw, what, dev) {
            Ok(_) => {
                self.nodes.push(raw);
                Ok(())
            }
            Err(code) => {
                self.invalidate();
                Err(code)
            }
        }
    }
}

/// Open captures: (stream, thread, mode).
pub static CAPTURES: Mutex<Vec<OpenCapture>> = Mutex::new(Vec::new());

/// An open capture: its stream, thread, mode and invalidation flag.
pub type OpenCapture = (u64, ThreadId, u32, Arc<AtomicBool>);

/// Refuse `what` if a capture forbids it on this thread, invalidating
/// that capture (the calls a capture cannot contain).
pub fn forbid(what: &str) -> Outcome {
    let me = std::thread::current().id();
    let hit: Vec<u64> = lock(&CAPTURES)
        .iter()
        .filter(|(_, thread, mode, _)| {
            (*thread == me && *mode != CAPTURE_RELAXED) || *mode == CAPTURE_GLOBAL
        })
        .map(|(stream, _, _, flag)| {
            flag.store(true, Ordering::Release);
            *stream
        })
        .collect();
    let Some(first) = hit.first() else {
        return Ok(());
    };
    violation(format!(
        "{what} while stream {first:#x} is capturing (not legal in a capture)"
    ));
    Err(STREAM_CAPTURE_UNSUPPORTED)
}
