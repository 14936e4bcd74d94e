//! The chunk slots of one arena page: which granule of the range has a
//! physical chunk, how many live slices touch it, and the FIFO of idle
//! ones (mapped, touched by no live slice). Plain data with O(1) steps;
//! `chunks.rs` decides when chunks are mapped, moved or released.

use std::collections::VecDeque;

use mem_storage::ChunkId;

/// A span that holds no slot (`take_idle` keeps nothing back).
#[allow(clippy::reversed_empty_ranges)]
pub(crate) const NONE: std::ops::RangeInclusive<u32> = 1..=0;

/// Where a moved chunk was mapped: (arena page, slot).
pub(crate) type Origin = (u32, u32);

/// One granule of an arena page.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Slot {
    /// Live slices overlapping it.
    pub(crate) live: u32,
    pub(crate) chunk: Option<ChunkId>,
    /// Mapped, touched by no live slice, and queued in `idle`.
    pub(crate) idle: bool,
    /// Scratch flag of `compact_idle` (false outside it).
    pub(crate) kept: bool,
}

/// The chunk slots of one arena page.
#[derive(Debug, Clone)]
pub(crate) struct ChunkMap {
    pub(crate) granularity: u64,
    /// Grown to the highest slot touched (ranges are carved from the low end).
    pub(crate) slots: Vec<Slot>,
    pub(crate) idle: VecDeque<u32>,
    pub(crate) idle_count: u64,
    pub(crate) mapped: u64,
}

impl ChunkMap {
    pub(crate) fn new(granularity: u64) -> Self {
        Self {
            granularity,
            slots: Vec::new(),
            idle: VecDeque::new(),
            idle_count: 0,
            mapped: 0,
        }
    }

    /// Slots `offset..offset + bytes` touches (none for an empty slice).
    pub(crate) fn span(&self, offset: u64, bytes: u64) -> std::ops::RangeInclusive<u32> {
        if bytes == 0 {
            return NONE;
        }
        let g = self.granularity;
        let first = offset / g;
        let last = (offset + bytes - 1) / g;
        (first as u32)..=(last as u32)
    }

    pub(crate) fn slot(&mut self, s: u32) -> &mut Slot {
        if s as usize >= self.slots.len() {
            self.slots.resize(s as usize + 1, Slot::default());
        }
        &mut self.slots[s as usize]
    }

    /// Mark mapped slot `s`, touched by no live slice, idle (newest).
    pub(crate) fn queue_idle(&mut self, s: u32) {
        let slot = self.slot(s);
        debug_assert!(slot.chunk.is_some() && slot.live == 0 && !slot.idle);
        slot.idle = true;
        self.idle.push_back(s);
        self.idle_count += 1;
        self.compact_idle();
    }

    /// Count one more live slice on mapped slot `s` (no longer idle; its
    /// queue entry goes stale).
    pub(crate) fn claim_slot(&mut self, s: u32) {
        let slot = self.slot(s);
        slot.live += 1;
        if slot.idle {
            slot.idle = false;
            self.idle_count -= 1;
        }
    }

    /// One live slice less on slot `s`; idle when none is left.
    pub(crate) fn release_slot(&mut self, s: u32) {
        let slot = self.slot(s);
        slot.live -= 1;
        if slot.live == 0 && slot.chunk.is_some() {
            self.queue_idle(s);
        }
    }

    /// Drop the queue's stale entries (slots that went live again, and the
    /// older entries of slots queued again) once they outnumber the idle
    /// slots, keeping the rest in order. Without it a slot reused in place
    /// (an allocation landing on cached chunks, the steady state) leaves an
    /// entry behind at each free and the queue grows without bound; with it
    /// the queue stays O(idle slots), and as a compaction follows at least
    /// 64 pushes it costs O(1) per push, amortized.
    pub(crate) fn compact_idle(&mut self) {
        if self.idle.len() <= 2 * self.idle_count as usize + 64 {
            return;
        }
        let mut kept = VecDeque::with_capacity(self.idle_count as usize);
        for &s in self.idle.iter().rev() {
            let slot = &mut self.slots[s as usize];
            if slot.idle && !slot.kept {
                slot.kept = true;
                kept.push_front(s);
            }
        }
        for &s in &kept {
            self.slots[s as usize].kept = false;
        }
        self.idle = kept;
    }

    /// The oldest idle slot outside `keep`, taken off the idle queue.
    pub(crate) fn take_idle(&mut self, keep: &std::ops::RangeInclusive<u32>) -> Option<u32> {
        let mut skipped = Vec::new();
        let found = loop {
            let Some(s) = self.idle.pop_front() else {
                break None;
            };
            let slot = self.slots[s as usize];
            if !slot.idle {
                continue; // went live again: a stale entry
            }
            if keep.contains(&s) {
                skipped.push(s);
                continue;
            }
            break Some(s);
        };
        for s in skipped.into_iter().rev() {
            self.idle.push_front(s);
        }
        if let Some(s) = found {
            self.slots[s as usize].idle = false;
            self.idle_count -= 1;
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map of `n` mapped slots, none live.
    fn mapped(n: u32) -> ChunkMap {
        let mut map = ChunkMap::new(1 << 16);
        for s in 0..n {
            map.slot(s).chunk = Some(ChunkId(u64::from(s) + 1));
        }
        map
    }

    #[test]
    fn slots_reused_in_place_do_not_grow_the_idle_queue() {
        let mut map = mapped(8);
        // Enough rounds to pass many compactions; fewer under miri, where
        // each costs ~1000x (the bound is checked every round either way).
        let rounds = if cfg!(miri) { 200 } else { 10_000 };
        for _ in 0..rounds {
            (0..8).for_each(|s| map.claim_slot(s));
            (0..8).for_each(|s| map.release_slot(s));
            assert!(map.idle.len() <= 2 * 8 + 64, "{} entries", map.idle.len());
        }
        assert_eq!(map.idle_count, 8);
        // Each idle slot comes out once, oldest first, then none.
        let order: Vec<u32> = std::iter::from_fn(|| map.take_idle(&NONE)).collect();
        assert_eq!(order, (0..8).collect::<Vec<_>>());
        assert!(map.slots.iter().all(|s| !s.kept));
    }

    #[test]
    fn compaction_keeps_the_order_of_the_latest_idle_periods() {
        let mut map = mapped(100);
        (0..100).for_each(|s| map.claim_slot(s));
        (0..100).for_each(|s| map.release_slot(s));
        // Slot 0 goes live and idle again: it is now the newest.
        for _ in 0..300 {
            map.claim_slot(0);
            map.release_slot(0);
        }
        assert!(map.idle.len() <= 2 * 100 + 64);
        let order: Vec<u32> = std::iter::from_fn(|| map.take_idle(&NONE)).collect();
        let mut expected: Vec<u32> = (1..100).collect();
        expected.push(0);
        assert_eq!(order, expected);
    }
}
