//! Blocks live before a snapshot's recording began.
//!
//! Users call `_record_memory_history` after loading the model, and the
//! history is a ring buffer that drops its oldest events, so a snapshot's
//! trace misses allocations that are live all along. Two kinds are found,
//! as PyTorch's `memory_viz` finds them:
//! - blocks the `segments` list shows allocated (`active_allocated`) whose
//!   address the trace never touched: live from the start to the end;
//! - blocks the trace frees (`free_completed`) before it touched their
//!   address at all: live from the start to that free.
//!
//! Each becomes an allocation at the start of the trace. An active block
//! whose address the trace freed and never allocated again contradicts the
//! history; it is counted and left out.

use std::collections::HashMap;

use super::event::PreExisting;
use super::pickle::Py;

/// A block to allocate before the trace's own events.
#[derive(Debug)]
pub(super) struct Block<'a> {
    pub(super) addr: u64,
    pub(super) size: u64,
    pub(super) stream: u64,
    /// The block's allocation stack, when the snapshot kept it.
    pub(super) frames: Option<&'a Py>,
}

/// A non-negative integer that fits in 64 bits.
fn uint(value: Option<&Py>) -> Option<u64> {
    match value {
        Some(Py::Int(v)) => u64::try_from(*v).ok(),
        _ => None,
    }
}

fn action(event: &Py) -> Option<&str> {
    match event.get("action") {
        Some(Py::Str(s)) => Some(s),
        _ => None,
    }
}

/// The blocks of `device` live before `events` began, active ones first
/// (in segment order), then freed ones (in trace order), and what they
/// add up to. Events or blocks with unreadable fields are passed over
/// here: the reader reports bad events, and a bad block is no evidence.
pub(super) fn pre_existing<'a>(
    events: &'a [Py],
    top: &'a Py,
    device: usize,
) -> (Vec<Block<'a>>, PreExisting) {
    // Address -> live at the end of the trace (present: touched by it).
    let mut live: HashMap<u64, bool> = HashMap::new();
    let mut freed = Vec::new();
    for event in events {
        let Some(addr) = uint(event.get("addr")) else {
            continue;
        };
        match action(event) {
            Some("alloc") => {
                live.insert(addr, true);
            }
            Some("free_completed") => match live.get(&addr) {
                None => {
                    live.insert(addr, false);
                    freed.push(Block {
                        addr,
                        size: uint(event.get("size")).unwrap_or(0),
                        stream: uint(event.get("stream")).unwrap_or(0),
                        frames: None,
                    });
                }
                Some(_) => {
                    live.insert(addr, false);
                }
            },
            _ => {}
        }
    }
    let mut stats = PreExisting::default();
    let mut blocks = Vec::new();
    let segments = match top.get("segments") {
        Some(Py::List(segments)) => &segments[..],
        _ => &[],
    };
    for segment in segments {
        if uint(segment.get("device")).is_some_and(|d| d != device as u64) {
            continue;
        }
        let stream = uint(segment.get("stream")).unwrap_or(0);
        let mut next = uint(segment.get("address")).unwrap_or(0);
        let Some(Py::List(list)) = segment.get("blocks") else {
            continue;
        };
        for block in list.iter() {
            let addr = uint(block.get("address"))
                .or_else(|| uint(block.get("addr")))
                .unwrap_or(next);
            let size = uint(block.get("size")).unwrap_or(0);
            next = addr.saturating_add(size);
            if !matches!(block.get("state"), Some(Py::Str(s)) if &**s == "active_allocated") {
                continue;
            }
            match live.get(&addr) {
                Some(true) => continue,
                Some(false) => {
                    stats.contradicted += 1;
                    continue;
                }
                None => {}
            }
            live.insert(addr, true);
            let requested = uint(block.get("requested_size")).filter(|&r| r > 0);
            let size = requested.unwrap_or(size);
            let frames = block
                .get("frames")
                .filter(|f| matches!(f, Py::List(l) if !l.is_empty()));
            stats.active_blocks += 1;
            stats.active_bytes = stats.active_bytes.saturating_add(size);
            blocks.push(Block {
                addr,
                size,
                stream,
                frames,
            });
        }
    }
    for block in &freed {
        stats.freed_blocks += 1;
        stats.freed_bytes = stats.freed_bytes.saturating_add(block.size);
    }
    blocks.extend(freed);
    stats.blocks = blocks.len() as u64;
    stats.bytes = stats.active_bytes.saturating_add(stats.freed_bytes);
    (blocks, stats)
}

#[cfg(test)]
#[path = "pytorch_blocks_tests.rs"]
mod tests;
