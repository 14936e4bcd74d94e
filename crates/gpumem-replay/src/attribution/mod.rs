//! Who holds the memory: the allocations live at one moment of a trace,
//! grouped by where they came from.
//!
//! PyTorch users open `memory_viz` to see which call sites hold memory at
//! the peak; this is that table. The live set at a moment is a property of
//! the trace, not of the allocator, so it is computed from the events
//! alone: the moment is "after event *i*" — the peak of live bytes, or the
//! event at which a replay's reserved bytes peaked.
//!
//! Groups are origins ([`Origins`](crate::trace::Origins): a tag or a stack's
//! first frame in the program's code). Allocations without one are grouped
//! by size (`untagged 4.00 MiB`), which still tells a weight from an
//! activation in an RMM log. The backward pass's share of a moment is
//! split into gradients and temporaries by lifetime (`backward.rs`).

use std::collections::HashMap;

use serde::Serialize;

mod backward;
mod share;

pub use backward::{BackwardRoles, Role};
pub use share::{BackwardShare, NodeShare, Share};

use crate::trace::{Event, Trace};
use gpumem::storage::units::format_bytes;

/// How many groups a report lists by default.
pub const DEFAULT_TOP: usize = 10;

/// One group of live allocations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Holder {
    /// The origin, or `untagged SIZE` for allocations without one.
    pub origin: String,
    /// Requested bytes the group holds.
    pub bytes: u64,
    /// Live allocations in the group.
    pub count: u64,
}

/// The allocations live after one event, grouped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveAt {
    /// The event, counted from 1 as replay reports count ops.
    pub op: u64,
    /// Requested bytes live after it.
    pub live_bytes: u64,
    /// Live allocations after it.
    pub live_count: u64,
    /// The largest groups, most bytes first (ties: by name).
    pub holders: Vec<Holder>,
    /// What the groups past `holders` hold together (`None` if nothing).
    pub rest: Option<Holder>,
    /// The backward pass's share of the live set, gradients apart from
    /// temporaries (`None` when no live allocation is the backward pass's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backward: Option<BackwardShare>,
}

/// Who holds the memory at the two moments a report names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Attribution {
    /// After the event at which live bytes peak.
    pub peak_live: LiveAt,
    /// After the op at which the replay's reserved bytes peaked (absent
    /// when the replay allocated nothing).
    pub peak_reserved: Option<LiveAt>,
}

/// The index of the event after which the most requested bytes are live
/// (the first such event), or `None` for a trace that allocates nothing.
pub fn peak_live_event(trace: &Trace) -> Option<usize> {
    let mut live: HashMap<u64, u64> = HashMap::new();
    let (mut bytes, mut best) = (0u64, None::<(u64, usize)>);
    for (index, event) in trace.events.iter().enumerate() {
        match *event {
            Event::Alloc { id, size, .. } => {
                let replaced = live.insert(id, size).unwrap_or(0);
                bytes = bytes - replaced + size;
                if best.is_none_or(|(peak, _)| bytes > peak) {
                    best = Some((bytes, index));
                }
            }
            Event::Free { id } => bytes -= live.remove(&id).unwrap_or(0),
            Event::Mode(_) | Event::Cleanup => {}
        }
    }
    best.map(|(_, index)| index)
}

/// The allocations live after event `event` (clamped to the trace), in at
/// most `top` groups.
pub fn live_at(trace: &Trace, event: usize, top: usize) -> LiveAt {
    let last = event.min(trace.events.len().saturating_sub(1));
    // Live id -> (size, index of its Alloc).
    let mut live: HashMap<u64, (u64, usize)> = HashMap::new();
    for (index, e) in trace.events.iter().enumerate().take(last + 1) {
        match *e {
            Event::Alloc { id, size, .. } => {
                live.insert(id, (size, index));
            }
            Event::Free { id } => {
                live.remove(&id);
            }
            Event::Mode(_) | Event::Cleanup => {}
        }
    }
    let mut groups: HashMap<String, Holder> = HashMap::new();
    let roles = BackwardRoles::of(trace);
    let mut backward = BackwardShare::default();
    let mut node_of_stack: HashMap<u32, Option<&str>> = HashMap::new();
    for &(size, at) in live.values() {
        if let Some(role) = roles.role_of(at) {
            let node = trace.origins.stack_of(at).and_then(|stack| {
                *node_of_stack
                    .entry(stack)
                    .or_insert_with(|| trace.origins.stacks().backward_node(stack))
            });
            backward.add(role, node.unwrap_or("?"), size);
        }
        let origin = match trace.origins.origin_of(at) {
            Some(origin) => origin.to_string(),
            None => format!("untagged {}", format_bytes(size)),
        };
        let group = groups.entry(origin.clone()).or_insert(Holder {
            origin,
            bytes: 0,
            count: 0,
        });
        group.bytes += size;
        group.count += 1;
    }
    let mut holders: Vec<Holder> = groups.into_values().collect();
    holders.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.origin.cmp(&b.origin)));
    let rest_groups = holders.split_off(top.min(holders.len()));
    let rest = (!rest_groups.is_empty()).then(|| Holder {
        origin: format!("{} more origins", rest_groups.len()),
        bytes: rest_groups.iter().map(|h| h.bytes).sum(),
        count: rest_groups.iter().map(|h| h.count).sum(),
    });
    LiveAt {
        op: last as u64 + 1,
        live_bytes: live.values().map(|(size, _)| size).sum(),
        live_count: live.len() as u64,
        holders,
        rest,
        backward: (backward.count > 0).then(|| backward.sorted()),
    }
}

#[cfg(test)]
mod tests;
