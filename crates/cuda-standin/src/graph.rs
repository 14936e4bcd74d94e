//! Stream capture and graphs.
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

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::thread::ThreadId;

use crate::driver::{DRIVER, lock, violation};
use crate::types::{
    CAPTURE_GLOBAL, CAPTURE_RELAXED, Outcome, STREAM_CAPTURE_INVALIDATED,
    STREAM_CAPTURE_UNSUPPORTED,
};
use crate::work::{Raw, resolve};

pub struct Capture {
    pub mode: u32,
    pub thread: ThreadId,
    pub nodes: Vec<Raw>,
    pub invalidated: bool,
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
            invalidated: false,
            id,
            allocs: Vec::new(),
        }
    }

    /// Record `raw` as a node after checking its addresses.
    pub fn record(&mut self, raw: Raw, what: &str) -> Outcome {
        if self.invalidated {
            return Err(STREAM_CAPTURE_INVALIDATED);
        }
        match resolve(&raw, what) {
            Ok(_) => {
                self.nodes.push(raw);
                Ok(())
            }
            Err(code) => {
                self.invalidated = true;
                Err(code)
            }
        }
    }
}

/// Open captures: (stream, thread, mode).
pub static CAPTURES: LazyLock<Mutex<Vec<(u64, ThreadId, u32)>>> = LazyLock::new(Mutex::default);

/// Refuse `what` if a capture forbids it on this thread, invalidating
/// that capture (the calls a capture cannot contain).
pub fn forbid(what: &str) -> Outcome {
    let me = std::thread::current().id();
    let hit: Vec<u64> = lock(&CAPTURES)
        .iter()
        .filter(|(_, thread, mode)| {
            (*thread == me && *mode != CAPTURE_RELAXED) || *mode == CAPTURE_GLOBAL
        })
        .map(|(stream, _, _)| *stream)
        .collect();
    let Some(first) = hit.first() else {
        return Ok(());
    };
    for handle in &hit {
        if let Ok(stream) = DRIVER.stream(*handle)
            && let Some(c) = lock(&stream.state).capture.as_mut()
        {
            c.invalidated = true;
        }
    }
    violation(format!(
        "{what} while stream {first:#x} is capturing (not legal in a capture)"
    ));
    Err(STREAM_CAPTURE_UNSUPPORTED)
}

/// The memory a graph's memory nodes hold, shared by its executables.
#[derive(Debug, Default)]
pub struct GraphMemory {
    pub bases: Vec<u64>,
}

pub struct Graph {
    pub nodes: Vec<Raw>,
    pub memory: Arc<GraphMemory>,
}

#[derive(Default)]
pub struct Graphs {
    pub graphs: HashMap<u64, Graph>,
    pub execs: HashMap<u64, Graph>,
}

/// Free a graph's memory once nothing shares it.
pub fn release(memory: Arc<GraphMemory>) {
    if let Some(m) = Arc::into_inner(memory) {
        let mut mem = lock(&DRIVER.mem);
        for base in m.bases {
            let _ = mem.free(base);
        }
    }
}

/// A node's handle: its graph's and its index.
pub fn node_handle(graph: u64, index: usize) -> u64 {
    ((index as u64 + 1) << 44) | graph
}

/// The graph and index a node handle names.
pub fn node_of(handle: u64) -> (u64, usize) {
    (
        handle & ((1 << 44) - 1),
        ((handle >> 44) as usize).wrapping_sub(1),
    )
}
