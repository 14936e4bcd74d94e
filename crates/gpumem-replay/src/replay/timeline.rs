//! Live and reserved bytes over the replay, down-sampled as it runs.
//!
//! Ops are grouped in equal buckets and each bucket keeps its maxima, so a
//! plot of a million ops still shows every peak while holding at most
//! `max_points` samples (a plain every-k-th sample would miss short peaks).

use serde::Serialize;

/// One bucket of the timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sample {
    /// Index of the bucket's first op.
    pub op: u64,
    /// Largest live (requested) bytes within the bucket.
    pub live: u64,
    /// Largest reserved bytes within the bucket.
    pub reserved: u64,
}

/// Collects bucketed maxima during a replay.
#[derive(Debug, Clone)]
pub struct Timeline {
    stride: u64,
    samples: Vec<Sample>,
    current: Option<Sample>,
}

impl Timeline {
    /// A timeline for `total_ops` ops keeping at most `max_points` samples
    /// (at least one).
    pub fn new(total_ops: u64, max_points: usize) -> Self {
        let max_points = max_points.max(1) as u64;
        let stride = total_ops.div_ceil(max_points).max(1);
        Timeline {
            stride,
            samples: Vec::with_capacity(total_ops.div_ceil(stride) as usize),
            current: None,
        }
    }

    /// Ops per bucket.
    pub fn stride(&self) -> u64 {
        self.stride
    }

    /// Notes the state after op `op`.
    #[inline]
    pub fn record(&mut self, op: u64, live: u64, reserved: u64) {
        let start = op - op % self.stride;
        match &mut self.current {
            Some(cur) if cur.op == start => {
                cur.live = cur.live.max(live);
                cur.reserved = cur.reserved.max(reserved);
            }
            slot => {
                if let Some(done) = slot.take() {
                    self.samples.push(done);
                }
                *slot = Some(Sample {
                    op: start,
                    live,
                    reserved,
                });
            }
        }
    }

    /// The samples, in op order.
    pub fn finish(mut self) -> Vec<Sample> {
        if let Some(done) = self.current.take() {
            self.samples.push(done);
        }
        self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_peak_survives_down_sampling() {
        let mut t = Timeline::new(10_000, 10);
        for op in 0..10_000u64 {
            let live = if op == 4_321 { 999 } else { 1 };
            t.record(op, live, live + 1);
        }
        let samples = t.finish();
        assert_eq!(samples.len(), 10);
        assert_eq!(samples.iter().map(|s| s.live).max(), Some(999));
        assert_eq!(samples[4].live, 999);
        assert_eq!(samples[3].live, 1);
    }

    #[test]
    fn fewer_ops_than_points_keeps_every_op() {
        let mut t = Timeline::new(3, 2000);
        for op in 0..3 {
            t.record(op, op, op);
        }
        assert_eq!(t.finish().len(), 3);
    }
}
