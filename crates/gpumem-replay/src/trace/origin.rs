//! What a trace says besides the events: where each allocation came from,
//! when each event happened, and what the recorded allocator itself held.
//!
//! Kept beside the events rather than in them: [`Event`](super::Event) is
//! what the replay loop walks, and it stays small and `Copy`. Each table is
//! empty when the source carried nothing for it, so a generated trace or an
//! RMM log costs nothing here.
//!
//! - **Origins**: a tag (gpumem JSONL `"tag"`) or the first frame of a stack
//!   outside the framework (PyTorch `frames`, JSONL `"frames"`), interned —
//!   a training step allocates from a few hundred call sites millions of
//!   times. The whole stack is kept too ([`Stacks`]), for the HTML page
//!   and for [`Origins::group_by`].
//! - **Times**: `time_us` per event (PyTorch snapshots, JSONL `"time_us"`).
//! - **Source reserved**: the recorded allocator's own reserved bytes after
//!   each event (PyTorch's segments), so a report can put "PyTorch reserved
//!   X" beside what gpumem would reserve.

use std::collections::HashMap;

use super::frames::GroupBy;
use super::stacks::Stacks;

/// Marks an event without an origin in [`Origins::origin_of`]'s table.
const NONE: u32 = u32::MAX;

/// Origins, times and the source allocator's reserved bytes (module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origins {
    names: Vec<String>,
    index: HashMap<String, u32>,
    by_event: Vec<u32>,
    times_us: Vec<u64>,
    source_reserved: Vec<u64>,
    source_name: Option<&'static str>,
    stacks: Stacks,
    stack_by_event: Vec<u32>,
    /// The origin name (by line) of each stack, once computed: an index
    /// into `names`, `NONE` when not yet computed or naming nothing.
    name_by_stack: Vec<u32>,
}

impl Origins {
    /// Name `event` (an allocation's index in the trace) as coming from
    /// `origin`. Names past `u32::MAX - 1` distinct ones are not kept.
    pub(crate) fn set_origin(&mut self, event: usize, origin: &str) {
        let id = match self.index.get(origin) {
            Some(&id) => id,
            None if self.names.len() >= NONE as usize => return,
            None => {
                let id = self.names.len() as u32;
                self.names.push(origin.to_string());
                self.index.insert(origin.to_string(), id);
                id
            }
        };
        if self.by_event.len() <= event {
            self.by_event.resize(event + 1, NONE);
        }
        self.by_event[event] = id;
    }

    /// Keep stack `stack` (an index into [`Origins::stacks`]) as the
    /// whole stack of the allocation at `event`, and name its origin from
    /// it (by line; [`Origins::group_by`] renames).
    pub(crate) fn set_stack(&mut self, event: usize, stack: u32) {
        if self.stack_by_event.len() <= event {
            self.stack_by_event.resize(event + 1, NONE);
        }
        self.stack_by_event[event] = stack;
        // The same few stacks recur for every step: name each once.
        let known = self.name_by_stack.get(stack as usize).copied();
        if let Some(id) = known.filter(|&id| id != NONE) {
            if self.by_event.len() <= event {
                self.by_event.resize(event + 1, NONE);
            }
            self.by_event[event] = id;
            return;
        }
        if let Some(origin) = self.stacks.origin(stack, GroupBy::Line) {
            self.set_origin(event, &origin);
            if self.name_by_stack.len() <= stack as usize {
                self.name_by_stack.resize(stack as usize + 1, NONE);
            }
            if let Some(&id) = self.index.get(&origin) {
                self.name_by_stack[stack as usize] = id;
            }
        }
    }

    /// The interned stacks, to add to.
    pub(crate) fn stacks_mut(&mut self) -> &mut Stacks {
        &mut self.stacks
    }

    /// The interned stacks.
    pub fn stacks(&self) -> &Stacks {
        &self.stacks
    }

    /// The stack of the allocation at `event`, when the source kept one.
    pub fn stack_of(&self, event: usize) -> Option<u32> {
        self.stack_by_event
            .get(event)
            .copied()
            .filter(|&s| s != NONE)
    }

    /// Name every allocation that has a stack by its origin frame as `by`
    /// says (tags and other names stay).
    pub fn group_by(&mut self, by: GroupBy) {
        if by == GroupBy::Line {
            return; // what `set_stack` named
        }
        let by_stack: Vec<Option<String>> = (0..self.stacks.len() as u32)
            .map(|stack| self.stacks.origin(stack, by))
            .collect();
        let old_names = std::mem::take(&mut self.names);
        let old_by_event = std::mem::take(&mut self.by_event);
        self.index.clear();
        self.name_by_stack.clear();
        for (event, &old) in old_by_event.iter().enumerate() {
            let renamed = self
                .stack_of(event)
                .and_then(|stack| by_stack.get(stack as usize).cloned().flatten());
            if let Some(name) = renamed.or_else(|| old_names.get(old as usize).cloned()) {
                self.set_origin(event, &name);
            }
        }
        if !self.by_event.is_empty() {
            self.by_event.resize(old_by_event.len(), NONE);
        }
    }

    /// Record that `event` happened at `time_us`.
    pub(crate) fn set_time(&mut self, event: usize, time_us: u64) {
        if self.times_us.len() <= event {
            // Events before the first timed one take its time: the trace
            // stays ordered, and a source either times every event or none.
            let fill = self.times_us.last().copied().unwrap_or(time_us);
            self.times_us.resize(event + 1, fill);
        }
        self.times_us[event] = time_us;
    }

    /// Record the source allocator's reserved bytes after each of `events`
    /// events (one entry per event), naming the allocator (`"PyTorch"`).
    pub(crate) fn set_source_reserved(&mut self, name: &'static str, reserved: Vec<u64>) {
        self.source_name = Some(name);
        self.source_reserved = reserved;
    }

    /// Make every table as long as the trace (`events` events).
    pub(crate) fn finish(&mut self, events: usize) {
        if !self.by_event.is_empty() {
            self.by_event.resize(events, NONE);
        }
        if let Some(&last) = self.times_us.last() {
            self.times_us.resize(events, last);
        }
        if !self.stack_by_event.is_empty() {
            self.stack_by_event.resize(events, NONE);
        }
    }

    /// Where the allocation at `event` came from, when the source said.
    pub fn origin_of(&self, event: usize) -> Option<&str> {
        let id = *self.by_event.get(event)?;
        self.names.get(id as usize).map(String::as_str)
    }

    /// Whether any allocation has an origin.
    pub fn has_origins(&self) -> bool {
        !self.names.is_empty()
    }

    /// Distinct origins.
    pub fn origin_count(&self) -> usize {
        self.names.len()
    }

    /// `time_us` of `event`, when the source timed its events.
    pub fn time_us(&self, event: usize) -> Option<u64> {
        self.times_us.get(event).copied()
    }

    /// Whether the source timed its events.
    pub fn has_times(&self) -> bool {
        !self.times_us.is_empty()
    }

    /// The recorded allocator's name and its reserved bytes after each
    /// event, when the source recorded them.
    pub fn source_reserved(&self) -> Option<(&'static str, &[u64])> {
        let name = self.source_name?;
        Some((name, &self.source_reserved))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_interned_and_untagged_events_have_none() {
        let mut o = Origins::default();
        o.set_origin(1, "forward (train.py:12)");
        o.set_origin(3, "forward (train.py:12)");
        o.set_origin(4, "backward");
        o.finish(6);
        assert_eq!(o.origin_count(), 2);
        assert_eq!(o.origin_of(0), None);
        assert_eq!(o.origin_of(3), Some("forward (train.py:12)"));
        assert_eq!(o.origin_of(4), Some("backward"));
        assert_eq!(o.origin_of(5), None);
        assert_eq!(o.origin_of(99), None);
    }

    #[test]
    fn times_fill_forward_so_every_event_has_one() {
        let mut o = Origins::default();
        o.set_time(2, 50);
        o.set_time(4, 70);
        o.finish(6);
        let times: Vec<_> = (0..6).map(|e| o.time_us(e).unwrap()).collect();
        assert_eq!(times, [50, 50, 50, 50, 70, 70]);
    }

    #[test]
    fn stacks_name_origins_and_group_by_renames_them_keeping_tags() {
        let mut o = Origins::default();
        let stacks = o.stacks_mut();
        let native = stacks.intern_frame("??", 0, "torch::unwind::unwind()");
        let user = stacks.intern_frame("/p/model/attn.py", 88, "attend");
        let other = stacks.intern_frame("/p/model/attn.py", 90, "score");
        let a = stacks.intern_stack(&[native, user]);
        let b = stacks.intern_stack(&[native, other]);
        assert_eq!(o.stacks_mut().intern_stack(&[native, user]), a, "interned");
        o.set_stack(0, a);
        o.set_origin(1, "weights");
        o.set_stack(2, b);
        o.finish(3);
        assert_eq!(o.origin_of(0), Some("attend (model/attn.py:88)"));
        assert_eq!(o.stack_of(1), None);
        o.group_by(GroupBy::File);
        assert_eq!(o.origin_of(0), Some("model/attn.py"));
        assert_eq!(o.origin_of(2), Some("model/attn.py"));
        assert_eq!(o.origin_of(1), Some("weights"));
        assert_eq!(o.origin_count(), 2);
        assert_eq!(o.stacks().stack(a), [native, user]);
    }

    #[test]
    fn a_trace_without_side_tables_reports_none() {
        let mut o = Origins::default();
        o.finish(10);
        assert!(!o.has_origins() && !o.has_times());
        assert_eq!(o.source_reserved(), None);
    }
}
