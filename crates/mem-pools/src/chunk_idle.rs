//! The idle FIFO of an arena page's chunk slots: mapped slots no live
//! slice touches, oldest first (trimming releases the oldest, a move takes
//! the oldest outside the span being mapped).
//!
//! A doubly linked list threaded through the slots themselves: queueing,
//! taking and a slot going live again are each O(1), with no allocation
//! and nothing stale left behind. (It was a queue of slot numbers with
//! lazy deletion, compacted once stale entries outnumbered idle slots: a
//! 3 GiB slice freed and reused pushed 1536 entries and ran the compaction
//! check per slot — 12.5 % of the instructions of a `training` replay.)

use crate::chunk_map::{ChunkMap, END, Slot};

/// Oldest idle slots looked at for one that borders an unmapped slot when
/// a chunk is moved (see [`ChunkMap::take_idle_to_move`]).
pub(crate) const MOVE_PROBE: usize = 64;

impl ChunkMap {
    /// Mark mapped slot `s`, touched by no live slice, idle (newest).
    #[inline]
    pub(crate) fn queue_idle(&mut self, s: u32) {
        let newest = self.newest;
        let slot = self.slot(s);
        debug_assert!(slot.chunk.is_some() && slot.live == 0 && !slot.idle);
        (slot.idle, slot.older, slot.newer) = (true, newest, END);
        match newest {
            END => self.oldest = s,
            n => self.slots[n as usize].newer = s,
        }
        self.newest = s;
        self.idle_count += 1;
    }

    /// Mark mapped slot `s` idle again as the *oldest* (a chunk taken for a
    /// move whose unmap was refused: first in line again).
    pub(crate) fn requeue_oldest(&mut self, s: u32) {
        let oldest = self.oldest;
        let slot = self.slot(s);
        debug_assert!(slot.chunk.is_some() && slot.live == 0 && !slot.idle);
        (slot.idle, slot.older, slot.newer) = (true, END, oldest);
        match oldest {
            END => self.newest = s,
            o => self.slots[o as usize].older = s,
        }
        self.oldest = s;
        self.idle_count += 1;
    }

    /// Take idle slot `s` out of the idle list (it stays mapped).
    #[inline]
    pub(crate) fn unqueue(&mut self, s: u32) {
        let Slot { older, newer, .. } = self.slots[s as usize];
        match older {
            END => self.oldest = newer,
            o => self.slots[o as usize].newer = newer,
        }
        match newer {
            END => self.newest = older,
            n => self.slots[n as usize].older = older,
        }
        let slot = &mut self.slots[s as usize];
        (slot.idle, slot.older, slot.newer) = (false, END, END);
        self.idle_count -= 1;
    }

    /// The oldest idle slot outside `keep`, taken off the idle list.
    pub(crate) fn take_idle(&mut self, keep: &std::ops::RangeInclusive<u32>) -> Option<u32> {
        let mut s = self.oldest;
        while s != END && keep.contains(&s) {
            s = self.slots[s as usize].newer;
        }
        if s == END {
            return None;
        }
        self.unqueue(s);
        Some(s)
    }

    /// The idle slot to move a chunk out of, outside `keep`: among the
    /// [`MOVE_PROBE`] oldest, the first that borders an unmapped slot (or
    /// the range's unused end), else the oldest; taken off the list.
    ///
    /// Stripping the edge of a region already stripped leaves the fully
    /// mapped holes whole, and placement (`arena_place.rs`) lands the next
    /// reservations there for no call; stripping the oldest wherever it
    /// is cuts into those holes. Measured: random's calls 45.5 k → 36.3 k
    /// at the same peak (64 looked at; 256: 33.5 k), serving 36.2 k →
    /// 34.2 k. Trimming stays strictly oldest first ([`Self::take_idle`]).
    pub(crate) fn take_idle_to_move(
        &mut self,
        keep: &std::ops::RangeInclusive<u32>,
    ) -> Option<u32> {
        let mut s = self.oldest;
        let mut first = END;
        for _ in 0..MOVE_PROBE {
            if s == END {
                break;
            }
            if !keep.contains(&s) {
                if self.borders_unmapped(s) {
                    first = s;
                    break;
                }
                if first == END {
                    first = s; // the oldest, should no border turn up
                }
            }
            s = self.slots[s as usize].newer;
        }
        if first == END {
            return self.take_idle(keep); // every one looked at was kept
        }
        self.unqueue(first);
        Some(first)
    }

    /// The idle slots, oldest first (tests).
    #[cfg(test)]
    pub(crate) fn idle_order(&self) -> Vec<u32> {
        let mut order = Vec::new();
        let mut s = self.oldest;
        while s != END {
            order.push(s);
            s = self.slots[s as usize].newer;
        }
        order
    }
}
