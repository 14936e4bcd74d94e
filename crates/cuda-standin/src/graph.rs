//! Graphs: what a capture recorded, instantiated and launched (the
//! launch is in `api/graph.rs`), and the memory its memory nodes hold.

use std::collections::HashMap;
use std::sync::Arc;

use crate::memory::MEM;
use crate::sync::lock;
use crate::work::Raw;

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
        let mut mem = lock(&MEM);
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
