//! What PyTorch's caching allocator itself reserved over a snapshot's
//! history: its segment events, anchored by the snapshot's `segments` list.

use super::pickle::Py;

/// Bytes PyTorch's segments held on `device` when the snapshot was taken
/// (`segments[*].total_size`); `None` when the snapshot has no segment list.
pub(super) fn held_at_snapshot(top: &Py, device: usize) -> Option<u64> {
    let Some(Py::List(segments)) = top.get("segments") else {
        return None;
    };
    let total = segments
        .iter()
        .filter(|d| match d.get("device") {
            Some(Py::Int(dev)) => *dev == device as i128,
            _ => true,
        })
        .filter_map(|d| match d.get("total_size") {
            Some(Py::Int(size)) => u64::try_from(*size).ok(),
            _ => None,
        })
        .fold(0u64, u64::saturating_add);
    Some(total)
}

/// PyTorch's reserved bytes over the trace, from its segment events.
///
/// The history is a ring buffer, so what was reserved when it starts is
/// not recorded; what is reserved when the snapshot was taken is (the
/// `segments` list), and the events give every change, so the start is
/// that total minus the changes. Without a segment list, the start is the
/// least that keeps the total from going negative.
#[derive(Debug, Default)]
pub(super) struct SegmentTotals {
    net: i128,
    after: Vec<i128>,
    seen: bool,
}

impl SegmentTotals {
    pub(super) fn change(&mut self, bytes: i128) {
        self.net += bytes;
        self.seen = true;
    }

    pub(super) fn after_event(&mut self) {
        self.after.push(self.net);
    }

    /// What was reserved after each event. Segment events after the last
    /// event (an `empty_cache` at the end) count toward the last one, so
    /// the last value is what the snapshot's segments hold.
    pub(super) fn reserved(mut self, at_snapshot: Option<u64>) -> Option<Vec<u64>> {
        if !self.seen && at_snapshot.is_none() {
            return None;
        }
        if let Some(last) = self.after.last_mut() {
            *last = self.net;
        }
        let lowest = self.after.iter().copied().min().unwrap_or(0).min(0);
        let start = match at_snapshot {
            Some(end) => (end as i128 - self.net).max(-lowest),
            None => -lowest,
        };
        let clamp = |v: i128| v.clamp(0, u64::MAX as i128) as u64;
        Some(self.after.iter().map(|n| clamp(start + n)).collect())
    }
}
