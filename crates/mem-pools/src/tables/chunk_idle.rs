//! The idle FIFO of an arena page's chunk slots: mapped slots no live
//! slice touches, oldest first (trimming releases the oldest chunk whose
//! slots are all idle, shedding one at the edge of a stripped region).
//!
//! A doubly linked list threaded through the slots themselves: queueing,
//! taking and a slot going live again are each O(1), with no allocation
//! and nothing stale left behind. (It was a queue of slot numbers with
//! lazy deletion, compacted once stale entries outnumbered idle slots: a
//! 3 GiB slice freed and reused pushed 1536 entries and ran the compaction
//! check per slot — 12.5 % of the instructions of a `training` replay.)
//! A slice's span is queued as one run, linked in one pass and spliced
//! after the newest once, and a run queued so is unlinked with one splice
//! when claimed again, instead of list-end and neighbour updates per slot.

use std::ops::RangeInclusive;

use crate::tables::chunk_map::{ChunkMap, END, Slot};

/// Oldest idle slots looked at for a chunk that borders an unmapped slot
/// when chunks are shed (see [`ChunkMap::take_idle_extent`]).
pub(crate) const MOVE_PROBE: usize = 64;

impl ChunkMap {
    /// Mark mapped slot `s`, touched by no live slice, idle (newest).
    #[inline]
    pub(crate) fn queue_idle(&mut self, s: u32) {
        let (newest, stamp) = (self.newest, self.submitted);
        let slot = self.slot(s);
        debug_assert!(slot.chunk.is_some() && slot.live == 0 && !slot.idle);
        (slot.idle, slot.older, slot.newer, slot.stamp) = (true, newest, END, stamp);
        self.shed_stuck = false;
        match newest {
            END => self.oldest = s,
            n => self.slots[n as usize].newer = s,
        }
        self.newest = s;
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

    /// Count a slice on every slot of `span`, all mapped (the caller
    /// checked: placement counted them). Idle slots leave the list as
    /// [`Self::unqueue`] per slot would leave it, but a run of consecutive
    /// slots that are also consecutive in the list (each one's `newer` is
    /// the next slot: a span released whole is queued so) is unlinked with
    /// one splice, its neighbours outside the run written once, not once
    /// per slot; past its first slot the run is walked as a slice of the
    /// span (no bounds check per slot). devlog: 303 → 152 instructions a
    /// call at 8–16 slots.
    pub(crate) fn claim_mapped_span(&mut self, span: RangeInclusive<u32>) {
        debug_assert_eq!(self.unmapped_in(span.clone()), 0);
        let (mut s, last) = (*span.start(), *span.end());
        let mut removed = 0;
        while s <= last {
            let slot = &mut self.slots[s as usize];
            slot.live += 1;
            if slot.idle {
                let (older, mut newer) = (slot.older, slot.newer);
                (slot.idle, slot.older, slot.newer) = (false, END, END);
                let start = s;
                s += 1;
                if newer == s && s <= last {
                    // The run goes on: its rest in one pass over the span
                    // (a run of one, gpt2-train's usual, never gets here).
                    // Their links are left stale: only an idle slot's are
                    // read, and queueing writes them all again.
                    for slot in &mut self.slots[s as usize..=last as usize] {
                        slot.live += 1;
                        newer = slot.newer;
                        slot.idle = false;
                        s += 1;
                        if newer != s {
                            break;
                        }
                    }
                }
                removed += u64::from(s - start);
                self.link(older, newer);
                continue;
            }
            s += 1;
        }
        self.idle_count -= removed;
    }

    /// One live slice less on every slot of `span` (counted, so they
    /// exist). The slots left with none join the idle list as its newest
    /// in slot order, as `queue_idle` per slot would queue them. This loop
    /// only counts down (most releases of small slices leave their slot
    /// live: gpt2-train); from the first slot the release leaves idle
    /// [`Self::queue_released`] takes over.
    pub(crate) fn release_span(&mut self, span: RangeInclusive<u32>) {
        let (first, last) = (*span.start(), *span.end());
        if first > last {
            return;
        }
        for (i, slot) in self.slots[first as usize..=last as usize]
            .iter_mut()
            .enumerate()
        {
            slot.live -= 1;
            if slot.live == 0 && slot.chunk.is_some() {
                return self.queue_released(first + i as u32, last);
            }
        }
    }

    /// The rest of [`Self::release_span`], from `head` (the first slot it
    /// leaves idle, counted down already) to `last`. Each slot left idle
    /// is linked to its two neighbour slots, a pure function of its number
    /// (no store to another slot, no list end per slot): right when they
    /// are all idle together, the usual case, and relinked past any slot
    /// still live between them otherwise. The run is then spliced after
    /// the old newest once. The usual case has a loop of its own, with no
    /// per-slot bookkeeping of the last idle slot and the count (devlog:
    /// 206 → 186 instructions a call at 8–16 slots).
    #[inline(never)]
    fn queue_released(&mut self, head: u32, last: u32) {
        let stamp = self.submitted;
        let run = &mut self.slots[head as usize..=last as usize];
        (run[0].idle, run[0].newer, run[0].stamp) = (true, head + 1, stamp);
        // The usual case first: each later slot goes idle too, one
        // induction variable and no bookkeeping per slot.
        let mut s = head;
        let mut rest = run[1..].iter_mut();
        let mut stopped = false;
        for slot in rest.by_ref() {
            s += 1;
            slot.live -= 1;
            if slot.live != 0 || slot.chunk.is_none() {
                stopped = true;
                break;
            }
            (slot.idle, slot.older, slot.newer, slot.stamp) = (true, s - 1, s + 1, stamp);
        }
        // The idle slots so far are `head..=head + tail`, `added` of them.
        let mut tail = (s - head) as usize - usize::from(stopped);
        let mut added = tail as u64 + 1;
        if stopped {
            // A slot stays live (or has no chunk): the rest one by one.
            let from = (s - head) as usize + 1;
            for (i, slot) in rest.enumerate() {
                let i = from + i;
                slot.live -= 1;
                if slot.live == 0 && slot.chunk.is_some() {
                    let s = head + i as u32;
                    (slot.idle, slot.older, slot.newer, slot.stamp) = (true, s - 1, s + 1, stamp);
                    (tail, added) = (i, added + 1);
                }
            }
        }
        if added != tail as u64 + 1 {
            // A slot still live between two left idle: link past it (every
            // idle slot of the run is new, the span's slots were live).
            let mut prev = 0;
            for i in 1..=tail {
                if run[i].idle {
                    run[prev].newer = head + i as u32;
                    run[i].older = head + prev as u32;
                    prev = i;
                }
            }
        }
        run[tail].newer = END;
        self.link(self.newest, head);
        self.newest = head + tail as u32;
        self.idle_count += added;
        self.shed_stuck = false;
    }

    /// Make `older` and `newer` neighbours in the idle list ([`END`]: the
    /// list's end).
    #[inline]
    fn link(&mut self, older: u32, newer: u32) {
        match older {
            END => self.oldest = newer,
            o => self.slots[o as usize].newer = newer,
        }
        match newer {
            END => self.newest = older,
            n => self.slots[n as usize].older = older,
        }
    }

    /// The oldest idle slot outside `keep`, taken off the idle list (tests
    /// of the list's order).
    #[cfg(test)]
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
    /// for no call (measured with one-granule chunks: random's calls
    /// 45.5 k → 36.3 k at the same peak, serving 36.2 k → 34.2 k).
    pub(crate) fn take_idle_extent(
        &mut self,
        keep: &RangeInclusive<u32>,
        edge: bool,
        limit: usize,
    ) -> Option<(u32, u32)> {
        let mut s = self.oldest;
        let mut found = None;
        for looked in 0..limit {
            if s == END || (found.is_some() && looked >= MOVE_PROBE) {
                break;
            }
            let (head, len) = self.extent(s);
            let last = head + (len - 1);
            let kept = !keep.is_empty() && head <= *keep.end() && last >= *keep.start();
            let next = self.slots[s as usize].newer;
            if !kept && self.extent_ready(head, len) {
                if !edge || self.extent_borders_unmapped(head, last) {
                    found = Some((head, len));
                    break;
                }
                found.get_or_insert((head, len));
            } else if edge && !kept && next != END {
                // Not ready (partly live, or its work runs): behind the
                // others, so the next shed does not walk it first again.
                self.rotate_newest(s);
            }
            s = next;
        }
        let (head, len) = found?;
        for t in head..head + len {
            self.unqueue(t);
        }
        Some((head, len))
    }

    /// Move idle slot `s` to the newest end of the idle list, keeping its
    /// stamp.
    fn rotate_newest(&mut self, s: u32) {
        let Slot { older, newer, .. } = self.slots[s as usize];
        self.link(older, newer);
        let newest = self.newest;
        let slot = &mut self.slots[s as usize];
        (slot.older, slot.newer) = (newest, END);
        self.slots[newest as usize].newer = s;
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
            s = self.slots[s as usize].newer;
        }
        order
    }
}
