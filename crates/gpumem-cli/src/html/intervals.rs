//! The allocations a page embeds: each as an interval over the x axis,
//! with its origin and stack.
//!
//! A backward allocation's origin names its role too
//! (`backward: MmBackward0 (mm) · gradient`, `· temporary`), as the
//! report's split makes it (`gpumem_replay::attribution::BackwardRoles`):
//! the by-origin view and the live list then show gradients and
//! temporaries as groups of their own.

use std::collections::HashMap;

use super::MAX_INTERVALS;
use super::stacks::PageStacks;
use gpumem_replay::attribution::{BackwardRoles, Role};
use gpumem_replay::trace::{Event, Trace};

/// What a backward allocation's origin is followed by on the page.
fn role_suffix(role: Role) -> &'static str {
    match role {
        Role::Gradient => " · gradient",
        Role::Temporary => " · temporary",
        Role::Undetermined => " · gradient or temporary (the recording ends inside the pass)",
    }
}

/// `[start x, end x (or null: live at the end), bytes, origin index or -1,
/// stack index or -1]`.
pub(super) type Interval = (u64, Option<u64>, u64, i64, i64);

/// What [`intervals`] returns.
pub(super) struct Embedded {
    pub(super) intervals: Vec<Interval>,
    pub(super) origins: Vec<String>,
    pub(super) pre_existing: usize,
    pub(super) left_out: usize,
    pub(super) stacks: PageStacks,
}

/// Every allocation of the trace as an interval, the largest
/// [`MAX_INTERVALS`] kept; returns the origin names used, how many were
/// left out, how many are pre-existing, and the stacks of those kept.
pub(super) fn intervals(trace: &Trace, x_of: &dyn Fn(usize) -> u64) -> Embedded {
    let mut open: HashMap<u64, usize> = HashMap::new();
    let mut all: Vec<(u64, Option<u64>, u64, usize)> = Vec::new();
    for (index, event) in trace.events.iter().enumerate() {
        match *event {
            Event::Alloc { id, size, .. } => {
                open.insert(id, all.len());
                all.push((x_of(index), None, size, index));
            }
            Event::Free { id } => {
                if let Some(at) = open.remove(&id) {
                    all[at].1 = Some(x_of(index));
                }
            }
            Event::Mode(_) | Event::Cleanup => {}
        }
    }
    let left_out = all.len().saturating_sub(MAX_INTERVALS);
    if left_out > 0 {
        all.sort_by_key(|a| std::cmp::Reverse(a.2));
        all.truncate(MAX_INTERVALS);
        all.sort_by_key(|a| (a.0, a.3));
    }
    let roles = BackwardRoles::of(trace);
    let mut names: Vec<String> = Vec::new();
    let mut index: HashMap<String, i64> = HashMap::new();
    let mut stacks = PageStacks::default();
    let pre = trace.stats.pre_existing.as_ref().map_or(0, |p| p.blocks);
    // Pre-existing blocks are the first events: after the sort by start
    // (stable), the first intervals.
    let pre_existing = all.iter().filter(|a| (a.3 as u64) < pre).count();
    let out = all
        .into_iter()
        .map(|(start, end, bytes, event)| {
            let origin = match trace.origins.origin_of(event) {
                Some(name) => {
                    let suffix = roles.role_of(event).map_or("", role_suffix);
                    *index.entry(format!("{name}{suffix}")).or_insert_with(|| {
                        names.push(format!("{name}{suffix}"));
                        names.len() as i64 - 1
                    })
                }
                None => -1,
            };
            let stack = stacks.of_event(&trace.origins, event);
            (start, end, bytes, origin, stack)
        })
        .collect();
    Embedded {
        intervals: out,
        origins: names,
        pre_existing,
        left_out,
        stacks,
    }
}
