//! The idle FIFO of an arena page's chunk slots: mapped slots no live
//! slice touches, oldest first (trimming releases the oldest chunk whose
//! slots are all idle, shedding one at the edge of a stripped region).
//!
//! A doubly linked list threaded through the slots themselves: queueing,
//! taking and a slot going live again are each O(1), with no allocation
//! and nothing stale left behind. (A queue of slot numbers with lazy
//! deletion would push an entry per slot of a large slice freed and
//! reused, and check per slot whether to compact the stale ones.)
//! Whole spans are claimed in `claim.rs` and released in
//! `release.rs`.

use std::ops::RangeInclusive;

use crate::tables::chunk_map::bits;
use crate::tables::chunk_map::{ChunkMap, END};

/// Oldest idle slots looked at for a chunk that borders an unmapped slot
/// when chunks are shed (see [`ChunkMap::take_idle_extent`]).
const MOVE_PROBE: usize = 64;

impl ChunkMap {
    /// The newer neighbour of idle slot `s` in the idle list, its word
    /// settled.
    #[inline]
    pub(crate) fn newer_of(&self, s: u32) -> u32 {
        match bits::get(&self.chain_bits, s) {
            true => s + 1,
            false => self.newer[s as usize],
        }
    }

    /// The older neighbour of idle slot `s` in the idle list, its word
    /// and the one before settled.
    #[inline]
    pub(crate) fn older_of(&self, s: u32) -> u32 {
        match s > 0 && bits::get(&self.chain_bits, s - 1) {
            true => s - 1,
            false => self.older[s as usize],
        }
    }

    /// [`Self::newer_of`] read through uniform words (a walk of the list
    /// may cross a rested word).
    #[inline]
    pub(crate) fn newer_through(&self, s: u32) -> u32 {
        match self.chain_bit(s) {
            true => s + 1,
            false => self.newer[s as usize],
        }
    }

    /// [`Self::older_of`] read through uniform words (tests walk back).
    #[cfg(test)]
    pub(crate) fn older_through(&self, s: u32) -> u32 {
        match s > 0 && self.chain_bit(s - 1) {
            true => s - 1,
            false => self.older[s as usize],
        }
    }

    /// Whether slot `s`'s newer neighbour is the next slot (read through
    /// a uniform word: a walk of the list may cross one).
    #[inline]
    fn chain_bit(&self, s: u32) -> bool {
        match self.uniform_at(s as usize / 64) {
            true => self.rested_at(s as usize / 64),
            false => bits::get(&self.chain_bits, s),
        }
    }

    /// Make `newer` the newer neighbour of idle slot `s`, its chain bit
    /// in step.
    #[inline]
    pub(crate) fn set_newer(&mut self, s: u32, newer: u32) {
        self.newer[s as usize] = newer;
        bits::put(&mut self.chain_bits, s, newer == s.wrapping_add(1));
    }

    /// Whether slot `s` is idle (a slot past the map's end is not).
    #[inline]
    pub(crate) fn is_idle(&self, s: u32) -> bool {
        match self.uniform_at(s as usize / 64) {
            true => self.rested_at(s as usize / 64),
            false => bits::get(&self.idle_bits, s),
        }
    }

    /// Mark mapped slot `s`, touched by no live slice, idle (newest).
    #[inline]
    pub(crate) fn queue_idle(&mut self, s: u32) {
        let (newest, stamp) = (self.newest, self.submitted);
        self.reach(s);
        self.settle_around(s, s);
        let i = s as usize;
        debug_assert!(self.slots[i].chunk.is_some() && !self.is_live(s) && !self.is_idle(s));
        bits::put(&mut self.idle_bits, s, true);
        // A stamp run of its own: its stamp bit is clear (it was not idle).
        (self.older[i], self.stamp[i]) = (newest, stamp);
        self.set_newer(s, END);
        self.shed_stuck = false;
        match newest {
            END => self.oldest = s,
            n => self.set_newer(n, s),
        }
        self.newest = s;
        self.idle_count += 1;
    }

    /// Take idle slot `s` out of the idle list (it stays mapped).
    #[inline]
    pub(crate) fn unqueue(&mut self, s: u32) {
        self.settle_around(s, s);
        self.link(self.older_of(s), self.newer_of(s));
        self.split_stamp_after(s);
        bits::put(&mut self.idle_bits, s, false);
        bits::put(&mut self.chain_bits, s, false);
        bits::put(&mut self.stamp_bits, s, false);
        self.idle_count -= 1;
    }

    /// Make `older` and `newer` neighbours in the idle list ([`END`]: the
    /// list's end).
    #[inline]
    pub(crate) fn link(&mut self, older: u32, newer: u32) {
        match older {
            END => self.oldest = newer,
            o => self.set_newer(o, newer),
        }
        match newer {
            END => self.newest = older,
            n => self.older[n as usize] = older,
        }
    }

    /// The oldest idle slot outside `keep`, taken off the idle list (tests
    /// of the list's order).
    #[cfg(test)]
    pub(crate) fn take_idle(&mut self, keep: &std::ops::RangeInclusive<u32>) -> Option<u32> {
        let mut s = self.oldest;
        while s != END && keep.contains(&s) {
            s = self.newer_through(s);
        }
        if s == END {
            return None;
        }
        self.unqueue(s);
        Some(s)
    }

    /// An idle chunk to unmap whole, none of whose slots is in `keep`, and
    /// its slots taken off the idle list: `(first slot, slots)`.
    ///
    /// The idle list is walked from the oldest slot, at most `limit` slots;
    /// a slot whose chunk still has a live slot elsewhere (a chunk is
    /// unmapped whole), or whose stream work may still be running, is
    /// passed over. Without `edge` the first chunk found
    /// wins (trimming: oldest first). With `edge`, of the [`MOVE_PROBE`]
    /// oldest, the first chunk that borders an unmapped slot (or the
    /// range's unused end) wins, else the first found: stripping the edge
    /// of a region already stripped leaves the fully mapped holes whole,
    /// and placement (`pools/arena/place.rs`) lands the next reservations there
    /// for no call, at the same peak (docs/pools.md).
    pub(crate) fn take_idle_extent(
        &mut self,
        keep: &RangeInclusive<u32>,
        edge: bool,
        limit: usize,
    ) -> Option<(u32, u32)> {
        let mut s = self.oldest;
        let mut found = None;
        // The chunk last found not ready: its other idle slots, usually
        // next in the list (a span goes idle as a run), are not either —
        // nothing the walk changes (the list's order) bears on it — so
        // they are passed over without checking it again.
        let mut unready = END;
        for looked in 0..limit {
            if s == END || (found.is_some() && looked >= MOVE_PROBE) {
                break;
            }
            let (head, len) = self.extent(s);
            let last = head + (len - 1);
            let kept = !keep.is_empty() && head <= *keep.end() && last >= *keep.start();
            let next = self.newer_through(s);
            let ready = !kept && head != unready && self.extent_ready(head, len);
            if !kept && !ready {
                unready = head;
            }
            if ready {
                if !edge || self.extent_borders_unmapped(head, last) {
                    found = Some((head, len));
                    break;
                }
                found.get_or_insert((head, len));
            } else if edge && !kept && next != END {
                // Not ready (partly live, or its work runs): behind the
                // others, so the next shed does not walk it first again.
                self.rotate_newest(s, next);
            }
            s = next;
        }
        let (head, len) = found?;
        // Every slot of the chunk is idle (`extent_ready`): one splice a run.
        self.unlink_idle(head, head + (len - 1));
        Some((head, len))
    }

    /// Move idle slot `s`, whose newer neighbour is `newer`, to the newest
    /// end of the idle list, keeping its stamp.
    fn rotate_newest(&mut self, s: u32, newer: u32) {
        self.settle_around(s, s);
        self.link(self.older_of(s), newer);
        let newest = self.newest;
        self.older[s as usize] = newest;
        self.set_newer(s, END);
        self.set_newer(newest, s);
        self.newest = s;
    }

    /// Whether the slot before `head` or after `last` has no chunk.
    fn extent_borders_unmapped(&self, head: u32, last: u32) -> bool {
        let mapped = |t: u32| {
            self.slots
                .get(t as usize)
                .is_some_and(|s| s.chunk.is_some())
        };
        (head > 0 && !mapped(head - 1)) || !mapped(last + 1)
    }

    /// The idle slots, oldest first (tests).
    #[cfg(test)]
    pub(crate) fn idle_order(&self) -> Vec<u32> {
        let mut order = Vec::new();
        let mut s = self.oldest;
        while s != END {
            order.push(s);
            s = self.newer_through(s);
        }
        order
    }
}
