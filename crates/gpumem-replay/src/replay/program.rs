//! A trace compiled for replay: ids resolved to dense slots before the clock
//! starts, so the timed loop indexes a vector instead of hashing ids.
//!
//! Compiling also settles what the trace itself decides: frees of ids that
//! are not live are dropped and counted (never fatal), and an id allocated
//! twice while live is an error naming the event. Stream numbers (any
//! `u64`, e.g. an RMM stream pointer) become dense indices in first-use
//! order, so a backend keeping one memory per stream indexes a vector.

use std::collections::HashMap;

use crate::error::{ReplayError, Result};
use crate::trace::{Event, Mode};

/// One replay step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Reserve `size` bytes on `stream` into `slot`.
    Alloc {
        /// Dense index of this allocation.
        slot: u32,
        /// Requested bytes.
        size: u64,
        /// Dense stream index (`Program::streams[stream]` is the trace's number).
        stream: u64,
    },
    /// Free what `slot` holds.
    Free {
        /// Dense index given at allocation.
        slot: u32,
    },
    /// Switch allocation mode.
    Mode(Mode),
    /// Explicit cleanup.
    Cleanup,
}

/// A compiled trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Program {
    /// Steps in order.
    pub ops: Vec<Op>,
    /// Number of slots (allocations) the program uses.
    pub slots: usize,
    /// Frees of ids that were not live, dropped from `ops`.
    pub unknown_frees: u64,
    /// The trace's stream numbers, by dense index, in first-use order.
    pub streams: Vec<u64>,
    /// Indices of the events dropped (the unknown frees), ascending: what
    /// maps an op back to its event and an event to its op.
    pub skipped_events: Vec<usize>,
}

impl Program {
    /// Compiles `events`.
    pub fn compile(events: &[Event]) -> Result<Program> {
        let mut live: HashMap<u64, u32> = HashMap::new();
        let mut ops = Vec::with_capacity(events.len());
        let mut slots: u32 = 0;
        let mut unknown_frees = 0;
        let mut stream_index: HashMap<u64, u64> = HashMap::new();
        let mut streams = Vec::new();
        let mut skipped_events = Vec::new();
        for (index, event) in events.iter().enumerate() {
            match *event {
                Event::Alloc { id, size, stream } => {
                    if live.contains_key(&id) {
                        return Err(ReplayError::IdAlreadyLive { event: index, id });
                    }
                    let slot = slots;
                    slots = slots
                        .checked_add(1)
                        .ok_or(ReplayError::TooManyAllocations {
                            max: u64::from(u32::MAX),
                        })?;
                    live.insert(id, slot);
                    let stream = *stream_index.entry(stream).or_insert_with(|| {
                        streams.push(stream);
                        streams.len() as u64 - 1
                    });
                    ops.push(Op::Alloc { slot, size, stream });
                }
                Event::Free { id } => match live.remove(&id) {
                    Some(slot) => ops.push(Op::Free { slot }),
                    None => {
                        unknown_frees += 1;
                        skipped_events.push(index);
                    }
                },
                Event::Mode(mode) => ops.push(Op::Mode(mode)),
                Event::Cleanup => ops.push(Op::Cleanup),
            }
        }
        Ok(Program {
            ops,
            slots: slots as usize,
            unknown_frees,
            streams,
            skipped_events,
        })
    }

    /// The event index of op `op` (both from 0).
    pub fn event_of_op(&self, op: usize) -> usize {
        // The event is op + (events skipped at or before it): iterate to
        // the fixed point, which only grows.
        let mut event = op;
        loop {
            let next = op + self.skipped_events.partition_point(|&s| s <= event);
            if next == event {
                return event;
            }
            event = next;
        }
    }

    /// The op index of event `event` (both from 0); a dropped event maps to
    /// the op after it.
    pub fn op_of_event(&self, event: usize) -> usize {
        event - self.skipped_events.partition_point(|&s| s < event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_map_to_events_and_back_across_dropped_unknown_frees() {
        let events = [
            Event::Free { id: 7 },
            Event::Alloc {
                id: 1,
                size: 8,
                stream: 0,
            },
            Event::Free { id: 9 },
            Event::Free { id: 8 },
            Event::Free { id: 1 },
        ];
        let p = Program::compile(&events).unwrap();
        assert_eq!(p.skipped_events, [0, 2, 3]);
        assert_eq!((p.event_of_op(0), p.event_of_op(1)), (1, 4));
        assert_eq!((p.op_of_event(1), p.op_of_event(4)), (0, 1));
        assert_eq!(p.op_of_event(2), 1, "a dropped event maps to the next op");
    }
}
